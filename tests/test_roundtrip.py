"""index.json is the story itself: it round-trips through the model unchanged."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from conftest import NOW
from hypothesis import given, settings
from hypothesis import strategies as st
from storygen import SEED_PATH, make_story, published_json, seed, write_story

from desk.config import Config
from desk.content.models import Story
from desk.render.json import story_json

STORY = "stories/2026-11-14/inference-throughput-race-kimi-deepseek/index.json"


def test_seed_round_trips_through_model_and_index_json() -> None:
    raw = seed()
    model = Story.model_validate(raw)
    produced = story_json(model, Config(base_url="https://hangingcontext.com"), raw)
    again = Story.model_validate(json.loads(produced))
    assert again == model
    # The seed's URL fields already follow the layout, so nothing at all changes.
    assert json.loads(produced) == raw
    assert list(json.loads(produced)) == list(raw)


def test_built_index_json_equals_input_but_recomputed_urls(desk, content: Path,
                                                          tmp_path: Path) -> None:
    raw = seed()
    write_story(content, raw, SEED_PATH.name)
    out = tmp_path / "public"
    result = desk("build", "--content", str(content), "--out", str(out), "--now", NOW,
                  "--base-url", "https://staging.example/desk")
    assert result.exit_code == 0, result.stderr
    built = json.loads((out / STORY).read_text(encoding="utf-8"))
    base = "https://staging.example/desk/stories/2026-11-14/inference-throughput-race-kimi-deepseek/"
    assert built["url"] == base
    assert built["links"]["json"] == base + "index.json"
    assert built["links"]["edition"] == "https://staging.example/desk/editions/2026-11-14T12/"
    assert built["reuse"]["canonical_url"] == base
    for key in ("url", "links"):
        built.pop(key), raw.pop(key)
    built["reuse"].pop("canonical_url"), raw["reuse"].pop("canonical_url")
    # The one key desk adds, derived from the story, comes last.
    assert list(built)[-1] == "authorship"
    assert built.pop("authorship")["statement"] == (
        "Written by agent muse from 3 sources · Published without human review")
    assert built == raw


def test_unknown_keys_are_kept_in_order_and_warned(desk, content: Path, tmp_path: Path) -> None:
    data = make_story(1)
    data = {"x_first": {"a": 1}, **data, "headlnie": "typo"}
    data["key_facts"][0]["extra"] = [1, 2]
    path = write_story(content, data)
    out = tmp_path / "public"
    result = desk("build", "--content", str(content), "--out", str(out), "--now", NOW)
    assert result.exit_code == 0, result.stderr
    assert f"{path}: /headlnie: unknown key 'headlnie' is kept but not used (did you mean 'headline'?)" in result.stderr
    assert f"{path}: /key_facts/0/extra: unknown key 'extra' is kept but not used" in result.stderr
    built = json.loads((out / "stories/2026-11-14/story-number-1/index.json").read_text())
    keys = [k for k in built if k not in ("url", "links", "authorship")]  # added by desk
    assert keys[0] == "x_first" and keys[-1] == "headlnie"
    assert built["key_facts"][0]["extra"] == [1, 2]
    assert built["x_first"] == {"a": 1}


def test_bom_and_offsets_are_accepted_and_normalised(desk, content: Path, tmp_path: Path) -> None:
    data = make_story(2)
    data["published_at"] = "2026-11-14T14:02:00+02:00"
    path = content / "stories" / "a.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(data).encode())
    out = tmp_path / "public"
    result = desk("build", "--content", str(content), "--out", str(out), "--now", NOW)
    assert result.exit_code == 0, result.stderr
    built = json.loads((out / "stories/2026-11-14/story-number-2/index.json").read_text())
    assert built["published_at"] == "2026-11-14T12:02:00Z"


EXAMPLES = int(os.environ.get("DESK_FUZZ_EXAMPLES", "300"))
URL = st.sampled_from(["https://old.example/a/", "http://Old.Example:8080/x?y=1", None])
# What the input may say of url, links and reuse: nothing, null, or keys in any order
# and subset, unknown ones among them, and a link named by its field name (json_).
ABSENT = object()
INPUT_LINKS = st.one_of(
    st.just(ABSENT), st.none(),
    st.lists(st.sampled_from(["html", "json", "json_", "markdown", "newsroom", "edition",
                              "x_more"]), unique=True).flatmap(
        lambda keys: st.fixed_dictionaries({key: URL for key in keys})))
REUSE = st.one_of(
    st.just(ABSENT), st.none(),
    st.permutations([*seed()["reuse"], "x_note"]).flatmap(
        lambda keys: st.lists(st.sampled_from(keys), unique=True).map(
            lambda chosen: {key: seed()["reuse"].get(key, "kept") for key in keys
                            if key in chosen})))
BASES = st.sampled_from(["https://hangingcontext.com", "https://Staging.Example/desk/",
                         "http://localhost:8000", "https://café.example/sub",
                         "https://h.example/a%20b/"])


@settings(max_examples=EXAMPLES, deadline=None)
@given(url=st.one_of(st.just(ABSENT), URL), links=INPUT_LINKS, reuse=REUSE, base=BASES,
       at=st.integers(0, 30), schema=st.sampled_from(["schema", "schema_"]))
def test_index_json_is_what_the_models_say(url: Any, links: Any, reuse: Any, base: str,
                                           at: int, schema: str) -> None:
    """story_json patches the dump; the models' own way (model_copy, then dump) is the
    definition, byte for byte, wherever the input puts or leaves out the three (and
    whichever name it gives the schema field)."""
    raw = {schema if k == "schema" else k: v for k, v in seed().items()
           if k not in ("url", "links", "reuse")}
    items = list(raw.items())
    for key, value in (("url", url), ("links", links), ("reuse", reuse)):
        if value is not ABSENT:
            items.insert(at % (len(items) + 1), (key, value))
    raw = dict(items)
    model = Story.model_validate(raw)
    config = Config(base_url=base)
    assert story_json(model, config, raw) == published_json(model, config, raw)
