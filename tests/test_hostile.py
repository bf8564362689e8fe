"""Hostile content renders inert, and no input can crash the build or escape --out.

`make test` runs a few hundred generated examples per property; `make fuzz` sets
DESK_FUZZ_EXAMPLES for a long run and prints the count.
"""

from __future__ import annotations

import json
import os
import shutil
import string
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from safety import assert_inert
from storygen import REPO, make_story, published_story, write_story

from desk.build.pipeline import build
from desk.config import load_config
from desk.content.catalog import Clock
from desk.content.loader import load_story_file, parse_json
from desk.content.models import Story

NOW = datetime(2026, 11, 15, tzinfo=UTC)
EXAMPLES = int(os.environ.get("DESK_FUZZ_EXAMPLES", "200"))
HOSTILE = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "<iframe src=\"https://evil.example\"></iframe>",
    "<a href=\"javascript:alert(1)\">x</a>",
    "[click](javascript:alert(1))",
    "[click](JaVaScRiPt:alert(1))",
    "[click]( javascript:alert(1))",
    "[click](java\tscript:alert(1))",
    "[click](&#106;avascript:alert(1))",
    "[click](vbscript:msgbox(1))",
    "[click](VBSCRIPT:x)",
    "[click](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "![img](data:image/png;base64,AAAA)",
    "![img](javascript:alert(1))",
    "<javascript:alert(1)>",
    "<svg onload=alert(1)>",
    "\"><script>alert(1)</script>",
    "' onmouseover='alert(1)",
    "</textarea><script>x</script>",
    "<style>body{background:url(javascript:x)}</style>",
    "\u202eevil\u202c",
    "\x00\x01\x1b[31m",
    "]]></content><script>x</script>",
    "{{ config }}{% raw %}",
]


def config_for(content: Path, out: Path) -> Any:
    return load_config(REPO / "pyproject.toml", {"content_dir": content, "output_dir": out,
                                                 "cache_dir": content.parent / "cache"})


def test_hostile_text_is_inert_and_visible(tmp_path: Path) -> None:
    content = tmp_path / "content"
    text = " ".join(HOSTILE)
    data = make_story(1, angle=text, dek=text, unresolved=[text],
                      decision_card={"useful_for": [text]},
                      sponsor={"label": text, "title": text, "text": text,
                               "cta": {"label": text, "url": "https://ok.example/"}},
                      disclosure=text, corrections=[{"at": "2026-11-14T13:00:00Z", "text": text}])
    data["headline"] = text
    data["key_facts"][0]["text"] = text
    data["sections"][0]["heading"] = text
    data["sections"][0]["paragraphs"][0]["markdown"] = "\n\n".join(HOSTILE)
    data["manifests"][0]["title"] = text
    write_story(content, data)
    out = tmp_path / "public"
    report = build(config_for(content, out), Clock(NOW))
    assert report.ok, report.findings
    for page in out.rglob("*.html"):
        document = assert_inert(page.read_bytes())
        if "stories" in page.parts:
            visible = document.text_content()
            assert "<script>alert(1)</script>" in visible
            assert "<iframe" in visible
            assert "onerror=alert(1)" in visible
    story = (out / "stories/2026-11-14/story-number-1/index.html").read_bytes()
    assert b"\x00" not in story and b"\x1b" not in story
    for feed in ("feed.xml", "atom.xml"):
        from lxml import etree
        etree.fromstring((out / feed).read_bytes())  # well-formed XML despite the text


# Text anywhere in unicode, including controls, RTL marks and NUL (surrogates are
# escaped separately, below, since they cannot be encoded as UTF-8).
any_text = st.text(st.characters(codec=None, exclude_categories=("Cs",)), max_size=80)
hostile_text = st.one_of(any_text, st.sampled_from(HOSTILE),
                         st.lists(st.sampled_from(HOSTILE + ["\n", " ", "*", "#", ">"]),
                                  max_size=8).map("".join))
long_text = st.integers(1, 20_000).map(lambda n: "word " * n)
scheme_case = st.sampled_from(["javascript", "vbscript", "data"]).flatmap(
    lambda s: st.lists(st.booleans(), min_size=len(s), max_size=len(s)).map(
        lambda flips: "".join(c.upper() if f else c for c, f in zip(s, flips, strict=True))))
hostile_link = st.tuples(scheme_case, st.sampled_from(["", " ", "\t", "\n", "%20", "&#x09;"]),
                         st.sampled_from(["alert(1)", "text/html,<script>x</script>"])).map(
    lambda t: f"[x]({t[1]}{t[0]}:{t[2]}) <{t[0]}:{t[2]}> ![i]({t[0]}:{t[2]})")
markdown_text = st.one_of(hostile_text, hostile_link, long_text,
                          st.integers(1, 200).map(lambda n: "> " * n + "deep"),
                          st.integers(1, 200).map(lambda n: "[" * n + "x" + "](y)" * n))
# (A beat is a path segment, checked as newsroom slugs are: not free text.)
TEXT_FIELDS = ("angle", "headline", "dek", "newsroom_title", "disclosure")


@st.composite
def hostile_story(draw: st.DrawFn) -> dict[str, Any]:
    data = make_story(draw(st.integers(0, 50)))
    for key in draw(st.lists(st.sampled_from(TEXT_FIELDS), max_size=len(TEXT_FIELDS))):
        data[key] = draw(hostile_text)
    data["key_facts"][0]["text"] = draw(hostile_text)
    data["sections"][0]["heading"] = draw(hostile_text)
    data["sections"][0]["paragraphs"][0]["markdown"] = draw(markdown_text)
    data["sections"][0]["paragraphs"][1]["markdown"] = draw(markdown_text)
    data["unresolved"] = draw(st.lists(hostile_text, max_size=3))
    data["manifests"][0]["title"] = draw(hostile_text)
    data["corrections"] = [{"at": "2026-11-14T20:00:00Z", "text": draw(markdown_text)}]
    if draw(st.booleans()):
        data[draw(st.sampled_from(["slug", "newsroom", "edition"]))] = draw(hostile_text)
    if draw(st.booleans()):
        data["related"] = [{"url": draw(st.one_of(hostile_text, st.just("https://x.example/"))),
                            "headline": draw(hostile_text)}]
    return data


def _surrogate_json(data: dict[str, Any], where: str) -> bytes:
    text = json.dumps({**data, where: "x\ud800y"})  # escaped as \ud800 by json.dumps
    return text.encode("ascii")


@pytest.mark.slow
@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=hostile_story(), surrogate=st.one_of(st.none(), st.sampled_from(TEXT_FIELDS)))
def test_any_story_builds_inert_or_fails_cleanly(data: dict[str, Any],
                                                 surrogate: str | None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        content = root / "content"
        (content / "stories").mkdir(parents=True)
        path = content / "stories" / "story.json"
        if surrogate is not None:
            path.write_bytes(_surrogate_json(data, surrogate))
        else:
            path.write_text(json.dumps(data, ensure_ascii=bool(data["id"] == "10001")),
                            encoding="utf-8")
        out = root / "public"
        report = build(config_for(content, out), Clock(NOW))
        # Nothing outside --out but desk's build cache where the config puts it.
        assert sorted(p.name for p in root.iterdir()) == (
            ["cache", "content", "public"] if report.ok else ["content"])
        if not report.ok:
            assert report.errors
            for finding in report.errors:
                line = finding.format()
                assert line.startswith(str(path)) and "\n" not in line
            return
        for page in out.rglob("*.html"):
            assert_inert(page.read_bytes())
        for page in out.rglob("*"):
            assert page.resolve().is_relative_to(out.resolve())
        built = next(out.glob("stories/*/*/index.json"))
        data = json.loads(built.read_bytes())
        data.pop("authorship")  # what desk derives (desk.render.disclosure), not the story
        loaded = Story.model_validate(data)
        original = load_story_file(path, [])
        assert original is not None
        assert loaded == published_story(original[0], config_for(content, out))


def test_fuzz_example_count_is_reported(capsys: pytest.CaptureFixture[str]) -> None:
    with capsys.disabled():
        print(f"\nhostile-input property tests: {EXAMPLES} examples each")
    assert EXAMPLES >= 200


def test_no_printable_ascii_is_lost_in_markdown_output(tmp_path: Path) -> None:
    content = tmp_path / "content"
    data = make_story(3)
    data["sections"][0]["paragraphs"][0]["markdown"] = string.printable.strip()
    write_story(content, data)
    out = tmp_path / "public"
    assert build(config_for(content, out), Clock(NOW)).ok
    md = (out / "stories/2026-11-14/story-number-3/index.md").read_text()
    assert string.printable.strip() in md
    shutil.rmtree(out)


# Structural extremes: what a JSON file can hold that no story needs.
EXTREME_JSON = st.one_of(
    st.integers(1, 4000).map(lambda n: "[" * n + "]" * n),
    st.integers(1, 4000).map(lambda n: '{"a":' * n + "1" + "}" * n),
    st.integers(1, 4000).map(lambda n: "[" * n),
    st.integers(1, 6000).map(lambda n: "9" * n),
    st.integers(1, 6000).map(lambda n: "0." + "1" * n + "e-99999"),
    st.sampled_from(["1e400", "-1e400", "1e-400", "-0", "NaN", "Infinity", "-Infinity",
                     "18446744073709551616", '"\\ud800"', '"x\\udfff"', '"\\u0000"',
                     '{"\\ud800": 1}', "null", "true", "[]", "{}", '""', "", " ", "\ufeff",
                     '"' + "x" * 100_000 + '"']),
)
WHERE = st.sampled_from([None, "headline", "source_count", "sections", "key_facts", "labels",
                         "published_at", "extra_key", "duplicate"])


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(value=EXTREME_JSON, where=WHERE)
def test_structural_extremes_are_findings_never_tracebacks(value: str, where: str | None) -> None:
    data = make_story(5)
    if where is None:
        text = value  # the whole file
    elif where == "duplicate":
        text = json.dumps(data)[:-1] + f', "headline": {value or "1"}}}'
    else:
        data[where] = "__EXTREME__"
        text = json.dumps(data).replace('"__EXTREME__"', value or "1")
    with tempfile.TemporaryDirectory() as tmp:
        content = Path(tmp) / "content"
        (content / "stories").mkdir(parents=True)
        path = content / "stories" / "story.json"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        config = load_config(REPO / "pyproject.toml", {
            "content_dir": content, "output_dir": Path(tmp) / "public",
            "cache_dir": Path(tmp) / "cache", "search": False})
        report = build(config, Clock(NOW))  # raises nothing
        if not report.ok:
            assert report.errors
            for finding in report.errors:
                line = finding.format()
                assert line.startswith(str(path)) and "\n" not in line, line
                assert len(line) < 1000, line[:200]


@pytest.mark.parametrize(("text", "message"), [
    ("[" * 5000 + "]" * 5000, ":1:1026: invalid JSON: arrays and objects nested too deeply"),
    ('{"a": ' + "[" * 200 + "]" * 200 + "}", ": /a/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0: nested more than 64 levels deep"),
    ('{"a": ' + "9" * 5000 + "}", ":1:7: invalid JSON: a number is too large"),
    ('{"a": 1e400}', ":1:7: invalid JSON: number 1e400 is too large"),
    ('{"a": NaN}', ":1:7: invalid JSON: NaN is not a JSON number"),
    ('{"a": -Infinity}', ":1:8: invalid JSON: -Infinity is not a JSON number"),
    ("[1, 2]", ": expected an object, got an array"),
])
def test_pathological_json_is_one_finding_naming_the_file(tmp_path: Path, text: str,
                                                          message: str) -> None:
    path = tmp_path / "story.json"
    path.write_text(text, encoding="utf-8")
    findings: list[Any] = []
    assert load_story_file(path, findings) is None
    assert [f.format() for f in findings] == [f"{path}{message}"]


# JSON texts as files hold them: a byte order mark or two, escaped or raw text (lone
# surrogates too, as escapes or as bytes no UTF-8 has), stray bytes before or after.
JSON_BYTES = st.builds(
    lambda bom, text, ascii_only, junk: (
        bom + b'{"a": ' + json.dumps(text, ensure_ascii=ascii_only).encode(
            "utf-8", "surrogatepass") + b"}" + junk),
    st.sampled_from([b"", b"\xef\xbb\xbf", b"\xef\xbb\xbf" * 2]), st.text(max_size=20),
    st.booleans(), st.sampled_from([b"", b" ", b"\xff", b"\xc0\xaf", b"\xed\xa0\x80"]))


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.one_of(JSON_BYTES, st.binary(max_size=40)))
def test_json_bytes_read_as_their_utf8_text_reads(raw: bytes) -> None:
    findings: list[Any] = []
    data = parse_json(raw, "story.json", findings)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        assert data is None and [f.code for f in findings] == ["invalid-utf8"]
        return
    if data is not None and not findings:
        assert data == json.loads(text)
    else:
        assert findings  # refused, or cleaned of what HTML forbids: said why
