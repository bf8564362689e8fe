"""The newsroom's own pages: Markdown files below content/pages/ (About, policies...).

A page is a small front matter of `key: value` lines between `---` lines, then Markdown:

    ---
    title: Corrections policy
    description: How we correct our mistakes.
    nav: 20
    policy: correctionsPolicy
    ---
    When a story is wrong, ...

The front matter is read by a strict parser of its own (not YAML, which has no place in
desk's runtime): every line `key: value`, the keys known, the values plain text or a
JSON string. Its URL comes from the file's place: `pages/about.md` is `/about/`,
`pages/policies/corrections.md` is `/policies/corrections/`.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from desk import urls
from desk.content.findings import Finding
from desk.content.prose import clean_text

PAGES = "pages"
FENCE = "---"
# The schema.org properties of a NewsMediaOrganization that a page may serve.
POLICY_KINDS = (
    "publishingPrinciples", "masthead", "correctionsPolicy", "ethicsPolicy",
    "actionableFeedbackPolicy", "verificationFactCheckingPolicy", "diversityPolicy",
    "diversityStaffingReport", "unnamedSourcesPolicy", "missionCoveragePrioritiesPolicy",
    "noBylinesPolicy", "ownershipFundingInfo",
)
_KEYS = ("title", "description", "nav", "policy")
MAX_TITLE = 200
MAX_DESCRIPTION = 500
# Told of a problem: (line, code, message).
_Problem = Callable[[int, str, str], None]
# A page is prose a person writes; past this it is a mistake (or an attack).
MAX_BYTES = 1 << 20


@dataclass(frozen=True)
class Page:
    """One valid page: where it came from, its URL path, its front matter and body."""

    file: str
    path: str  # its URL path, /SEGMENT/.../
    title: str
    description: str
    nav: int | None
    policy: str | None
    body: str  # Markdown, as written
    digest: str  # sha256 of the file's bytes


def page_files(content: Path, findings: list[Finding]) -> list[str]:
    """Every *.md file below content/pages, hidden names skipped, sorted by path; a
    symlink is refused (a page is a file of the content, not a way out of it)."""
    top = content / PAGES
    found: list[str] = []
    if not top.is_dir():
        return found
    for folder, dirs, files in os.walk(top):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".")
                         and not os.path.islink(os.path.join(folder, d)))
        for name in files:
            path = os.path.join(folder, name)
            if name.startswith(".") or not name.endswith(".md"):
                continue
            if os.path.islink(path):
                findings.append(Finding(path, "", "page-symlink",
                                        "a page must be a file, not a symlink", line=1, column=1))
                continue
            found.append(path)
    return sorted(found)


def load_pages(content: Path, findings: list[Finding]) -> tuple[Page, ...]:
    """Every valid page below content/pages, in path order; each problem a finding with
    the file and line (a page whose URL another takes is not loaded)."""
    pages: list[Page] = []
    for file in page_files(content, findings):
        page = load_page(Path(file), content / PAGES, findings)
        if page is not None:
            pages.append(page)
    return tuple(_distinct(pages, findings))


def load_page(file: Path, top: Path, findings: list[Finding]) -> Page | None:
    """One page file, or None with findings."""
    shown = str(file)
    before = len(findings)

    def problem(line: int, code: str, message: str) -> None:
        findings.append(Finding(shown, "", code, message, line=line, column=1))

    try:
        raw = file.read_bytes()
    except OSError as exc:
        problem(1, "unreadable", f"cannot read file: {exc.strerror}")
        return None
    if len(raw) > MAX_BYTES:
        problem(1, "page-too-large", f"a page is at most {MAX_BYTES} bytes")
        return None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        problem(raw.count(b"\n", 0, exc.start) + 1, "encoding", "not UTF-8")
        return None
    path = _url_path(file, top, problem)
    fields, body = front_matter(clean_text(text.replace("\r\n", "\n")), problem)
    if path is None or fields is None or len(findings) > before:
        return None
    return Page(shown, path, fields["title"], fields.get("description", ""),
                int(fields["nav"]) if "nav" in fields else None, fields.get("policy"),
                body, hashlib.sha256(raw).hexdigest())


def _url_path(file: Path, top: Path, problem: _Problem) -> str | None:
    """The page's URL path from its place below content/pages."""
    parts = file.relative_to(top).with_suffix("").parts
    try:
        path = urls.page_path(parts)
    except ValueError as exc:
        problem(1, "page-url", str(exc))
        return None
    return path


def front_matter(text: str, problem: _Problem) -> tuple[dict[str, str] | None, str]:
    """The front matter's fields and the Markdown after it (None: no valid front matter;
    the problems told to `problem`)."""
    lines = text.split("\n")
    if lines[0].rstrip() != FENCE:
        problem(1, "front-matter", f"a page starts with a front matter: a line '{FENCE}', "
                "then `key: value` lines (title, description, nav, policy), then "
                f"'{FENCE}'")
        return None, ""
    end = next((i for i in range(1, len(lines)) if lines[i].rstrip() == FENCE), None)
    if end is None:
        problem(1, "front-matter", f"the front matter has no closing '{FENCE}' line")
        return None, ""
    fields: dict[str, str] = {}
    told: list[int] = []

    def tell(line: int, code: str, message: str) -> None:
        told.append(line)
        problem(line, code, message)

    for number in range(1, end):
        line = lines[number]
        if line.strip() and not line.lstrip().startswith("#"):
            _field(line, number + 1, fields, tell)
        if told:  # one finding says what is wrong; the lines after it may be right
            return None, ""
    ok = _check_fields(fields, end + 1, problem)
    return (fields if ok else None), "\n".join(lines[end + 1:]).strip("\n") + "\n"


def _field(line: str, number: int, fields: dict[str, str], problem: _Problem) -> None:
    """One `key: value` line into fields."""
    key, colon, value = line.partition(":")
    key = key.strip()
    if not colon or not key.isidentifier() or line[:1].isspace():
        problem(number, "front-matter", "the front matter must be a mapping: each line "
                f"`key: value` (found {line.strip()[:40]!r})")
        return
    if key not in _KEYS:
        problem(number, "front-matter", f"unknown key {key!r}: use {', '.join(_KEYS)}")
        return
    if key in fields:
        problem(number, "front-matter", f"{key!r} is given twice")
        return
    value = value.strip()
    if value.startswith('"'):
        try:
            decoded = json.loads(value)
        except ValueError:
            decoded = None
        if not isinstance(decoded, str):
            problem(number, "front-matter", f"{key}: a quoted value is a JSON string")
            return
        value = decoded
    fields[key] = value
    if not _valid_value(key, value, number, problem):
        del fields[key]


def _valid_value(key: str, value: str, number: int, problem: _Problem) -> bool:
    # One minus sign at most: int() reads no more, and the page is built from it.
    if key == "nav" and not (value.isascii() and value.removeprefix("-").isdigit()
                             and len(value) <= 6):
        problem(number, "front-matter", "nav: a whole number (the order in the navigation)")
        return False
    if key == "policy" and value not in POLICY_KINDS:
        problem(number, "page-policy", f"unknown policy kind {value!r}: use one of "
                + ", ".join(POLICY_KINDS))
        return False
    limit = {"title": MAX_TITLE, "description": MAX_DESCRIPTION}.get(key)
    if limit is not None and (len(value) > limit or "\n" in value):
        problem(number, "front-matter", f"{key}: one line of at most {limit} characters")
        return False
    return True


def _check_fields(fields: dict[str, str], end: int, problem: _Problem) -> bool:
    if not fields.get("title", "").strip():
        problem(end, "front-matter", "the front matter needs a title")
        return False
    return True


def _distinct(pages: list[Page], findings: list[Finding]) -> list[Page]:
    """The pages whose URL and policy no earlier page takes (each clash a finding)."""
    kept: list[Page] = []
    paths: dict[str, str] = {}
    policies: dict[str, str] = {}
    for page in pages:
        if page.path in paths:
            findings.append(Finding(page.file, "", "page-url", f"URL {page.path} is "
                                    f"{paths[page.path]}'s already", line=1, column=1))
            continue
        if page.policy is not None and page.policy in policies:
            findings.append(Finding(page.file, "", "page-policy", f"{page.policy} is "
                                    f"{policies[page.policy]}'s already", line=1, column=1))
            continue
        paths[page.path] = page.file
        if page.policy is not None:
            policies[page.policy] = page.file
        kept.append(page)
    return kept

