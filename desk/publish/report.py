"""The publish report: what a build published, held and refused, the story files it held
back, the drafts it skipped, the moves it redirected and the withdrawals it applied, as
JSON and Markdown."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from desk.build.pipeline import BuildReport
from desk.render.templates import isotime, oneline

# Items per list in the Markdown summary.
SHOWN = 20


def report_data(report: BuildReport, size: dict[str, Any] | None = None) -> dict[str, Any]:
    """JSON-ready publish report; `size` is the built site's (desk.publish.budget.budget_data)."""
    held = [{"id": s.summary.id, "url_path": s.url_path, "path": s.path,
             "published_at": isotime(s.summary.published_at)} for s in report.held]
    return {
        "ok": report.ok,
        "published": len(report.published),
        # Counted from the catalog's groups, not from each of the stories (100,000 an
        # hour at that size).
        "newsrooms": dict(sorted((g.key, len(g.stories)) for g in report.newsrooms)),
        "editions": dict(sorted(((g.key, len(g.stories)) for g in report.editions),
                                reverse=True)),
        "held": held,
        "next_due": isotime(report.next_due) if report.next_due else None,
        "drafts_skipped": [{"id": s.summary.id, "url_path": s.url_path, "path": s.path}
                           for s in report.skipped],
        "redirects": [{"id": r.id, "from": r.path, "to": r.target} for r in report.redirects],
        "withdrawn": [{"id": n.id, "url_path": n.path, "path": n.file, "reason": n.reason,
                       "withdrawn_at": isotime(n.withdrawn_at)} for n in report.withdrawn],
        "held_back": [{"path": h.path, "kept": h.kept, "note": h.note,
                       "findings": [f.as_dict() | {"line": f.format()} for f in h.findings]}
                      for h in report.held_back],
        "refused": [f.as_dict() | {"line": f.format()} for f in report.errors],
        "warnings": [f.as_dict() | {"line": f.format()} for f in report.warnings],
        "timings": {stage: round(seconds, 3) for stage, seconds in report.timings.items()},
        "output": {"files": report.files, "bytes": report.bytes, "reused": report.reused},
        "size": size,
    }


def report_markdown(data: dict[str, Any]) -> str:
    """The report as a Markdown summary (for GitHub's job summary)."""
    status = "published" if data["ok"] else "**refused**: nothing was published"
    if data["ok"] and data["held_back"]:
        status += (f", **{len(data['held_back'])} story file(s) held back**: they fail "
                   "their checks")
    lines = [
        "## desk publish",
        "",
        f"Build {status}.",
        "",
        "| published | held | refused (errors) | warnings | files | seconds |",
        "|---|---|---|---|---|---|",
        f"| {data['published']} | {len(data['held'])} | {len(data['refused'])} | "
        f"{len(data['warnings'])} | {data['output']['files']} | "
        f"{sum(data['timings'].values()):.2f} |",
        "",
    ]
    if data["newsrooms"]:
        lines += ["| newsroom | stories |", "|---|---|"]
        lines += [f"| {name} | {count} |" for name, count in data["newsrooms"].items()]
        lines.append("")
    if data.get("size"):
        lines += size_markdown(data["size"])
    if data["held"]:
        lines += ["Held for later:", ""]
        lines += [f"- `{h['url_path']}` at {h['published_at']}" for h in data["held"][:SHOWN]]
        lines.append("")
    lines += held_back_lines(data["held_back"])
    lines += lifecycle_lines(data)
    if data["refused"]:
        lines += ["Errors:", ""]
        lines += [f"- `{r['line']}`" for r in data["refused"][:50]]
        lines.append("")
    return "\n".join(lines) + "\n"


def size_markdown(size: dict[str, Any]) -> list[str]:
    """The size figures: the site's bytes, by part and per story, against the limit."""
    stories = max(1, size["stories"])
    lines = [
        size_line(size),
        "",
        "| part | MB | KB per story |",
        "|---|---|---|",
    ]
    lines += [f"| {part} | {value / 1e6:,.1f} | {value / stories / 1000:,.1f} |"
              for part, value in size["parts"].items()]
    lines.append("")
    if size["warning"]:
        lines += [f"**{size['warning']}**", ""]
    return lines


def size_line(size: dict[str, Any]) -> str:
    """One line: the site's bytes, per story, and its share of GitHub Pages' limit."""
    line = (f"Site: {size['bytes'] / 1e6:,.1f} MB in {size['files']:,} files, "
            f"{size['bytes_per_story'] / 1000:,.1f} KB per story, "
            f"{size['share_of_limit']:.1%} of GitHub Pages' limit")
    if size["limit_reached_on"]:
        line += (f" (reached around {size['limit_reached_on']} at {size['stories_per_day']} "
                 "stories a day)")
    return line + "."


def held_back_lines(held: list[dict[str, Any]]) -> list[str]:
    """The summary's list of held story files, each with its findings."""
    if not held:
        return []
    lines = ["Held back (every other story was published; fix these files):", ""]
    for item in held:
        lines.append(f"- `{item['path']}`: {item['note']}")
        lines += [f"  - `{f['line']}`" for f in item["findings"]]
    lines.append("")
    return lines


def lifecycle_lines(data: dict[str, Any]) -> list[str]:
    """The summary's lists of drafts skipped, moves redirected and withdrawals applied."""
    lines: list[str] = []
    sections: tuple[tuple[str, str, Callable[[dict[str, Any]], str]], ...] = (
        ("drafts_skipped", "Drafts skipped (`desk build --drafts` writes them):",
         lambda d: f"- `{d['path']}`"),
        ("redirects", "Moves redirected:", lambda r: f"- `{r['from']}` → `{r['to']}`"),
        ("withdrawn", "Withdrawals applied:",
         lambda w: f"- `{w['url_path'] or w['id']}` at {w['withdrawn_at']}: "
                   f"{oneline(w['reason'])}"),
    )
    for key, title, line in sections:
        if data[key]:
            lines += [title, ""] + [line(item) for item in data[key][:SHOWN]]
            if len(data[key]) > SHOWN:
                lines.append(f"- … and {len(data[key]) - SHOWN} more")
            lines.append("")
    return lines
