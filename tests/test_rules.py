"""Every check rule's code has a case that raises it, and the rule lists run in order."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from storygen import REPO, make_story, write_story, write_withdrawal

from desk.build.inspection import inspect_content
from desk.config import load_config
from desk.content import checks

Mutate = Callable[[dict[str, Any]], None]


def _uncite_fact(s: dict[str, Any]) -> None:
    s["key_facts"][0]["cites"] = []


def _unknown_manifest(s: dict[str, Any]) -> None:
    s["key_facts"][0]["cites"][0]["manifest_id"] = "nowhere"


def _no_claims(s: dict[str, Any]) -> None:
    s["key_facts"][0]["cites"][0]["claim_ids"] = []


def _cited_ids(s: dict[str, Any]) -> None:
    s["cited_manifest_ids"] = s["cited_manifest_ids"][:1]


def _extra_manifest(s: dict[str, Any]) -> None:
    s["manifests"].append({"manifest_id": "spare", "title": "Never cited"})


def _edition_gap(s: dict[str, Any]) -> None:
    s["edition"] = "2026-11-01T00"


def _source_count(s: dict[str, Any]) -> None:
    s["source_count"] = 7


def _run_manifests(s: dict[str, Any]) -> None:
    s["run_these_manifests"] = {"manifest_ids": ["other"], "steps": []}


def _reuse(s: dict[str, Any]) -> None:
    s["reuse"] = {"summary": "Something else entirely."}


def _related_missing(s: dict[str, Any]) -> None:
    s["related"] = [{"url": "https://hangingcontext.com/stories/2026-01-01/gone/"}]


def _no_alt(story: dict[str, Any]) -> None:
    story["images"] = [{"url": "https://photos.example/a.jpg", "credit": "Agency"}]


def _no_credit(story: dict[str, Any]) -> None:
    story["images"] = [{"url": "https://photos.example/a.jpg", "alt": "A picture"}]


def _narrow_lead(story: dict[str, Any]) -> None:
    story["images"] = [{"url": "https://photos.example/a.jpg", "alt": "A picture",
                        "credit": "Agency", "width": 800, "height": 450}]


# code: (how story 1 is changed, what a second story shares with it: its URL, its id or
# its newsroom under another title; "no reuse" builds without the site's reuse terms,
# "reviewed only" with publish_unreviewed = false; or
# a withdrawal names an id no story has / story 1 twice)
CASES: dict[str, tuple[Mutate | None, str]] = {
    checks.UNCITED_TEXT: (_uncite_fact, ""),
    checks.UNKNOWN_MANIFEST: (_unknown_manifest, ""),
    checks.EMPTY_CLAIMS: (_no_claims, ""),
    checks.CITED_IDS_MISMATCH: (_cited_ids, ""),
    checks.UNCITED_MANIFEST: (_extra_manifest, ""),
    checks.EDITION_GAP: (_edition_gap, ""),
    checks.SOURCE_COUNT: (_source_count, ""),
    checks.RUN_MANIFESTS_MISMATCH: (_run_manifests, ""),
    checks.REUSE_DIFFERS: (_reuse, ""),
    checks.RELATED_MISSING: (_related_missing, ""),
    checks.IMAGE_ALT_MISSING: (_no_alt, ""),
    checks.IMAGE_CREDIT_MISSING: (_no_credit, ""),
    checks.LEAD_IMAGE_NARROW: (_narrow_lead, ""),
    checks.REVIEW_MISSING: (None, "reviewed only"),
    checks.DUPLICATE_URL: (None, "url"),
    checks.DUPLICATE_ID: (None, "id"),
    checks.NEWSROOM_TITLE_CONFLICT: (None, "title"),
    checks.REUSE_TERMS_MISSING: (None, "no reuse"),
    checks.WITHDRAWN_UNKNOWN: (None, "withdraw-unknown"),
    checks.DUPLICATE_WITHDRAWAL: (None, "withdraw-twice"),
}


def rule_codes() -> set[str]:
    """Every code constant the checks module declares."""
    return {value for name, value in vars(checks).items()
            if name.isupper() and isinstance(value, str) and name != "__all__"}


def test_every_rule_code_has_a_case() -> None:
    assert set(CASES) == rule_codes()


@pytest.mark.parametrize("code", sorted(CASES))
def test_each_case_raises_its_code(code: str, tmp_path: Path) -> None:
    mutate, twin = CASES[code]
    content = tmp_path / "content"
    story = make_story(1)
    if mutate is not None:
        mutate(story)
    write_story(content, story)
    if twin == "url":
        write_story(content, make_story(2, slug="story-number-1"), "second.json")
    elif twin == "id":
        write_story(content, make_story(2, id=story["id"]))
    elif twin == "title":
        write_story(content, make_story(2, newsroom_title="Another Title"))
    elif twin == "withdraw-unknown":
        write_withdrawal(content, "no-such-story")
    elif twin == "withdraw-twice":
        write_withdrawal(content, story["id"], name="first.json")
        write_withdrawal(content, story["id"], name="second.json")
    reuse = {"reuse": {}} if twin == "no reuse" else {}
    if twin == "reviewed only":
        reuse["publish_unreviewed"] = False
    config = load_config(REPO / "pyproject.toml", {"content_dir": content, **reuse})
    codes = [f.code for f in inspect_content(config).findings]
    assert code in codes
    clean = load_config(REPO / "pyproject.toml", {"content_dir": tmp_path / "clean"})
    write_story(clean.content_dir, make_story(1))
    assert code not in [f.code for f in inspect_content(clean).findings]


def test_rules_are_listed_once_each() -> None:
    assert len(set(checks.STORY_RULES)) == len(checks.STORY_RULES)
    assert len(set(checks.ACROSS_RULES)) == len(checks.ACROSS_RULES)
    assert len(set(checks.WITHDRAWAL_RULES)) == len(checks.WITHDRAWAL_RULES)
