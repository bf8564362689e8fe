"""What a deploy did, for people (a line on the terminal, the job summary on GitHub
Actions) and for machines (the JSON report)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from desk.deploy.run import Outcome
from desk.render.kinds import KINDS, kind_of


def deploy_data(outcome: Outcome, error: str = "") -> dict[str, Any]:
    """JSON-ready deploy report; the operations in the order they were done."""
    plan = outcome.planned
    return {
        "ok": not error,
        "error": error,
        "target": outcome.target,
        "dry_run": outcome.dry_run,
        "uploaded": len(outcome.uploaded),
        "deleted": len(outcome.deleted),
        "unchanged": outcome.unchanged,
        "kept": len(plan.kept) if plan else 0,
        "failed": len(outcome.failed),
        "bytes": outcome.bytes,
        "seconds": round(outcome.seconds, 3),
        "by_kind": dict(Counter(kind_of(p) for p in outcome.uploaded)),
        "planned": {
            "uploads": [f.path for f in plan.uploads] if plan else [],
            "deletes": list(plan.deletes) if plan else [],
            "kept": sorted(plan.kept) if plan else [],
            "bytes": plan.upload_bytes if plan else 0,
        },
        "log": [list(step) for step in outcome.log],
    }


def deploy_line(data: dict[str, Any]) -> str:
    """One line: the counts."""
    if data["dry_run"]:
        planned = data["planned"]
        return (f"Dry run for {data['target']}: would upload {len(planned['uploads'])} "
                f"({planned['bytes']:,} bytes), delete {len(planned['deletes'])}, leave "
                f"{data['unchanged']} unchanged; nothing was changed.")
    return (f"Deployed to {data['target']}: {data['uploaded']} uploaded "
            f"({data['bytes']:,} bytes), {data['deleted']} deleted, {data['unchanged']} "
            f"unchanged, {data['kept']} replaced but kept a while, {data['seconds']:.2f} s")


def deploy_markdown(data: dict[str, Any]) -> str:
    """The report as a Markdown job summary."""
    status = "dry run, nothing changed" if data["dry_run"] else (
        "done" if data["ok"] else f"**failed**: {data['error']}")
    lines = [
        "## desk deploy", "", f"`{data['target']}`: {status}", "",
        "| uploaded | deleted | unchanged | failed | bytes uploaded | replaced, kept a while "
        "| seconds |",
        "|---|---|---|---|---|---|---|",
        f"| {data['uploaded']} | {data['deleted']} | {data['unchanged']} | {data['failed']} "
        f"| {data['bytes']:,} | {data['kept']} | {data['seconds']:.2f} |", "",
    ]
    if data["by_kind"]:
        lines += ["| kind | uploaded |", "|---|---|"]
        lines += [f"| {k} | {data['by_kind'][k]} |" for k in KINDS if k in data["by_kind"]]
        lines.append("")
    return "\n".join(lines) + "\n"
