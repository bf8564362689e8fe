"""The provenance gate: one minimal story per check code, asserting the exact line."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from storygen import REPO, make_story, write_story

Mutation = Callable[[dict[str, Any]], None]


def _set(pointer: str, value: Any) -> Mutation:
    def mutate(data: dict[str, Any]) -> None:
        *parents, last = pointer.strip("/").split("/")
        node: Any = data
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value
    return mutate


def _pop(key: str) -> Mutation:
    return lambda data: data.pop(key)


def _both(*mutations: Mutation) -> Mutation:
    def mutate(data: dict[str, Any]) -> None:
        for m in mutations:
            m(data)
    return mutate


# code -> (mutation of make_story(1), expected "pointer: [code] message")
CASES: dict[str, tuple[Mutation, str]] = {
    "unknown-manifest": (
        _both(_set("/sections/0/paragraphs/1/cites/0/manifest_id", "404"),
              _set("/cited_manifest_ids", ["900000101", "404"]),
              lambda data: data["manifests"].pop()),
        "/sections/0/paragraphs/1/cites/0/manifest_id: [unknown-manifest] manifest '404' is not in /manifests"),
    "empty-claims": (
        _set("/key_facts/0/cites/0/claim_ids", []),
        "/key_facts/0/cites/0/claim_ids: [empty-claims] cites a manifest but no claim ids"),
    "cited-ids-mismatch": (
        _set("/cited_manifest_ids", ["900000101"]),
        "/cited_manifest_ids: [cited-ids-mismatch] lists [900000101] but the story cites [900000101, 900000102]"),
    "invalid-segment": (
        _set("/slug", "Not/A Slug"),
        "/slug: [invalid-segment] 'Not/A Slug' is not a valid path segment: use lowercase letters, digits and single hyphens (pattern ^[a-z0-9]+(-[a-z0-9]+)*$)"),
    "unsupported-schema": (
        _set("/schema", "hangingcontext.desk/2"),
        "/schema: [unsupported-schema] must be 'hangingcontext.desk/1', got \"hangingcontext.desk/2\""),
    "unsupported-type": (
        _set("/type", "video"),
        "/type: [unsupported-type] must be 'story', got \"video\""),
    "edition-gap": (
        _set("/edition", "2026-11-12T12"),
        "/edition: [edition-gap] edition 2026-11-12T12 is 48.0 h away from published_at (at most 24 h)"),
    "missing-field": (_pop("headline"), "/headline: [missing-field] field required"),
    "invalid-value": (_set("/source_count", "3"),
                      "/source_count: [invalid-value] expected an integer, got a string"),
    "url-mismatch": (
        _set("/url", "https://hangingcontext.com/stories/2026-11-13/story-number-1/"),
        "/url: [url-mismatch] https://hangingcontext.com/stories/2026-11-13/story-number-1/ differs from the layout's path /stories/2026-11-14/story-number-1/ (the layout's URL is used)"),
    "source-count": (_set("/source_count", 3),
                     "/source_count: [source-count] is 3 but /sources has 2"),
    "run-manifests-mismatch": (
        _set("/run_these_manifests", {"manifest_ids": ["900000101"]}),
        "/run_these_manifests/manifest_ids: [run-manifests-mismatch] lists [900000101] but /cited_manifest_ids is [900000101, 900000102]"),
    "related-missing": (
        _set("/related", [{"url": "https://hangingcontext.com/stories/2026-11-01/gone/",
                           "headline": "Gone"}]),
        "/related/0/url: [related-missing] https://hangingcontext.com/stories/2026-11-01/gone/ points at a story that is not in the content"),
    "unknown-key": (_set("/dekk", "x"),
                    "/dekk: [unknown-key] unknown key 'dekk' is kept but not used (did you mean 'dek'?)"),
    "uncited-manifest": (
        _set("/manifests/2", {"manifest_id": "900000103", "title": "Extra"}),
        "/manifests/2: [uncited-manifest] manifest '900000103' is listed but never cited"),
    "uncited-text": (_set("/key_facts/0/cites", []),
                     "/key_facts/0: [uncited-text] has no citation"),
    "reuse-differs": (
        _set("/reuse", {"attribution": "Somebody"}),
        "/reuse: [reuse-differs] differs from the site's reuse terms in attribution"),
}
ERRORS = {"unknown-manifest", "empty-claims", "cited-ids-mismatch", "invalid-segment",
          "unsupported-schema", "unsupported-type", "edition-gap", "missing-field",
          "invalid-value"}


@pytest.mark.parametrize("code", sorted(CASES))
def test_each_check_code(code: str, desk, content: Path) -> None:
    mutate, expected = CASES[code]
    data = make_story(1)
    if code == "uncited-manifest":
        data["manifests"].append({})
    mutate(data)
    path = write_story(content, data, "story.json")
    result = desk("check", "--content", str(content))
    lines = result.stdout.splitlines()
    assert lines == [f"{path}: {expected}"]
    assert result.exit_code == (1 if code in ERRORS else 0)
    if code not in ERRORS:
        assert desk("check", "--content", str(content), "--strict").exit_code == 1


def test_duplicate_ids_and_urls(desk, content: Path) -> None:
    first = write_story(content, make_story(1), "a.json")
    second = write_story(content, {**make_story(2), "id": "10001"}, "b.json")
    third = write_story(content, {**make_story(1), "id": "x"}, "c.json")
    lines = desk("check", "--content", str(content)).stdout.splitlines()
    assert lines == [
        f"{second}: /id: [duplicate-id] id '10001' is also the id of {first}",
        f"{third}: /slug: [duplicate-url] /stories/2026-11-14/story-number-1/ is also the URL of {first}",
    ]


def test_syntax_errors_carry_line_and_column(desk, content: Path) -> None:
    path = content / "stories" / "x.json"
    path.write_text('{"schema": "hangingcontext.desk/1",\n "type": }')
    result = desk("check", "--content", str(content))
    assert result.stdout.splitlines() == [f"{path}:2:10: [invalid-json] invalid JSON: Expecting value"]
    assert result.exit_code == 1


def test_errors_come_first_and_json_format(desk, content: Path) -> None:
    data = make_story(1, dekk="x")
    data["key_facts"][0]["cites"][0]["claim_ids"] = []
    write_story(content, data)
    result = desk("check", "--content", str(content), "--format", "json")
    findings = json.loads(result.stdout)
    assert [f["code"] for f in findings] == ["empty-claims", "unknown-key"]
    assert findings[0]["severity"] == "error" and findings[1]["severity"] == "warning"
    assert result.exit_code == 1


def test_build_refuses_on_check_errors(desk, content: Path, tmp_path: Path) -> None:
    data = make_story(1)
    data["cited_manifest_ids"] = []
    write_story(content, data)
    result = desk("build", "--content", str(content), "--out", str(tmp_path / "out"))
    assert result.exit_code == 1
    assert "[cited-ids-mismatch]" not in result.stderr and "/cited_manifest_ids: lists" in result.stderr
    assert not (tmp_path / "out").exists()


def test_shipped_content_has_no_errors(desk) -> None:
    result = desk("check", "--content", str(REPO / "content"))
    assert result.exit_code == 0
    assert "[" not in "".join(line.split(": [", 1)[1][:1] for line in result.stdout.splitlines()
                              if "error" in line)
    assert "0 error(s)" in result.stderr


def test_newsroom_title_conflicts_name_both_files_and_titles(desk, content: Path,
                                                              tmp_path: Path) -> None:
    # make_story(n) is published n minutes after noon: story 3 is the newest.
    write_story(content, make_story(1, newsroom="climate", newsroom_title="Climate Desk"),
                "a.json")
    older = write_story(content, make_story(2, newsroom="climate",
                                            newsroom_title="Climate Desk"), "b.json")
    newest = write_story(content, make_story(3, newsroom="climate", newsroom_title="Climate"),
                         "c.json")
    write_story(content, make_story(4, newsroom="climate", newsroom_title=""), "d.json")
    result = desk("check", "--content", str(content))
    assert result.stdout.splitlines() == [
        f"{older}: /newsroom_title: [newsroom-title-conflict] 'Climate Desk' differs from "
        f"'Climate' in {newest}, another story of newsroom 'climate'; the newest story's "
        "title is used"]
    assert result.exit_code == 0
    out = tmp_path / "public"
    built = desk("build", "--content", str(content), "--out", str(out), "--no-cache",
                 "--now", "2026-11-15T00:00:00Z")
    assert built.exit_code == 0
    assert "'Climate Desk' differs from 'Climate'" in built.stderr
    page = (out / "n" / "climate" / "index.html").read_text(encoding="utf-8")
    assert "<h1>Climate</h1>" in page


def test_missing_reuse_terms_are_a_warning(content: Path, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from desk.cli import main

    write_story(content, make_story(1))
    project = tmp_path / "pyproject.toml"
    project.write_text('[tool.desk]\nbase_url = "https://example.org"\ntitle = "No terms"\n', encoding="utf-8")
    result = CliRunner().invoke(main, ["check", "--config", str(project),
                                       "--content", str(content)])
    assert result.stdout.splitlines() == [
        "[tool.desk.reuse]: [reuse-terms-missing] the configuration states no reuse terms, "
        "so /terms/reuse/ and /.well-known/reuse.json say none (each story's index.json "
        "keeps its own): add the table to the settings"]
    assert result.exit_code == 0
    project.write_text('[tool.desk]\nbase_url = "https://example.org"\n[tool.desk.reuse]\nsummary = "Free to quote."\n',
                       encoding="utf-8")
    result = CliRunner().invoke(main, ["check", "--config", str(project),
                                       "--content", str(content)])
    assert result.stdout == "" and result.exit_code == 0


def test_withdrawal_files_are_validated_with_pointers(desk, content: Path) -> None:
    write_story(content, make_story(1))
    folder = content / "withdrawn"
    folder.mkdir()
    bad = folder / "bad.json"
    bad.write_text(json.dumps({"id": 10001, "withdrawn_at": "2026-11-15T09:00:00",
                               "reason": "  ", "note": "x"}))
    long = folder / "long.json"
    long.write_text(json.dumps({"id": "10001", "withdrawn_at": "2026-11-15T09:00:00Z",
                                "reason": "x" * 501}))
    broken = folder / "broken.json"
    broken.write_text('{"id": "10001",')
    result = desk("check", "--content", str(content))
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        f"{bad}: /id: [invalid-value] expected a string, got a number",
        f"{bad}: /withdrawn_at: [invalid-value] datetime has no UTC offset: add Z or +HH:MM",
        f"{bad}: /reason: [invalid-value] must not be empty",
        f"{bad}: /note: [unknown-key] unknown key 'note'",
        f"{broken}:1:16: [invalid-json] invalid JSON: Expecting property name enclosed in "
        "double quotes",
        f"{long}: /reason: [invalid-value] is 501 characters long; at most 500",
    ]
