"""How each kind of change record (desk.content.models.ChangeKind) is named wherever a
story's changes are shown: its page, its Markdown, the feeds and the corrections log."""

from __future__ import annotations

from collections.abc import Iterable

# Each kind in words, as a label before the change's date and text.
LABELS = {
    "correction": "Correction",
    "clarification": "Clarification",
    "update": "Update",
    "editors-note": "Editor's note",
}


def label(kind: str) -> str:
    """A kind of change in words ("Clarification")."""
    return LABELS.get(kind, kind)


def heading(kinds: Iterable[str]) -> str:
    """What a story's list of changes is called: "Corrections" while every change is one
    (as before kinds existed), else "Changes"."""
    return "Corrections" if all(kind == "correction" for kind in kinds) else "Changes"
