"""What `desk check` tells a pull request's run on GitHub Actions: an annotation on the
line of each finding (the runner marks it on the pull request's diff), and a job summary
listing them.

Drafts never fail the check, so their findings are annotated as warnings whatever their
severity, and counted apart.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import replace

from desk.content.findings import Finding
from desk.publish.annotations import annotation, finding_line, workspace_path

# The summary lists this many findings; the annotations and `desk check`'s own output
# carry every one.
SHOWN = 100
_DRAFT_NOTE = "in a draft: not published, so it does not fail the check"
_TICKS = re.compile(r"`+")


def check_annotations(findings: Sequence[Finding], drafts: Sequence[Finding]) -> list[str]:
    """One workflow command per finding, the drafts' as warnings."""
    lines = [annotation(f, "desk check") for f in findings]
    lines += [annotation(replace(f, severity="warning"), "desk check (draft)", _DRAFT_NOTE)
              for f in drafts]
    return lines


def check_markdown(findings: Sequence[Finding], drafts: Sequence[Finding],
                   checked: str) -> str:
    """The job summary: the counts, then each finding with its file and line."""
    errors = sum(f.is_error for f in findings)
    status = "**failed**" if errors else "passed"
    lines = ["## desk check", "",
             f"{checked}: {status}, {errors} error(s), {len(findings) - errors} warning(s)"
             + (f"; {len(drafts)} finding(s) in drafts, which never fail it" if drafts else ""),
             ""]
    listed = [(f, "") for f in findings] + [(f, " (draft)") for f in drafts]
    if listed:
        lines += ["| | file | finding |", "|---|---|---|"]
        for finding, draft in listed[:SHOWN]:
            kind = ("error" if finding.is_error else "warning") + draft
            where = f"{workspace_path(finding.path)}:{finding_line(finding)}"
            text = f"[{finding.code}] " + (f"{finding.pointer}: " if finding.pointer else "")
            lines.append(f"| {kind} | {code_span(where)} | {code_span(text + finding.message)} |")
        if len(listed) > SHOWN:
            lines.append(f"\n… and {len(listed) - SHOWN} more (the check's log has them all)")
        lines.append("")
    return "\n".join(lines) + "\n"


def code_span(text: str) -> str:
    """Text as a Markdown code span in a table cell: shown as it is, whatever it holds
    (author-written values among it)."""
    flat = " ".join(text.split()).replace("|", "\\|")
    longest = max((len(m.group()) for m in _TICKS.finditer(flat)), default=0)
    fence = "`" * (longest + 1)
    return f"{fence} {flat} {fence}"


def tell_github(findings: Sequence[Finding], drafts: Sequence[Finding], checked: str,
                echo: Callable[[str], None]) -> None:
    """Under GitHub Actions: the annotations through `echo` (the step's output), and the
    job summary appended to the file the runner names."""
    if os.environ.get("GITHUB_ACTIONS") == "true":
        for line in check_annotations(findings, drafts):
            echo(line)
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if step_summary:
        with open(step_summary, "a", encoding="utf-8") as handle:
            handle.write(check_markdown(findings, drafts, checked))
