"""The seed story's three outputs match the reviewed golden files (`make golden` rewrites)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import NOW
from storygen import SEED_PATH

GOLDEN = Path(__file__).resolve().parent / "golden"
STORY = "stories/2026-11-14/inference-throughput-race-kimi-deepseek"


@pytest.mark.parametrize("name", ["index.html", "index.md", "index.json"])
def test_seed_story_matches_golden(desk, content: Path, tmp_path: Path, name: str) -> None:
    shutil.copy(SEED_PATH, content / "stories" / SEED_PATH.name)
    out = tmp_path / "public"
    result = desk("build", "--content", str(content), "--out", str(out), "--now", NOW)
    assert result.exit_code == 0, result.stderr
    produced = (out / STORY / name).read_bytes()
    golden = GOLDEN / name
    if os.environ.get("DESK_UPDATE_GOLDEN"):
        GOLDEN.mkdir(exist_ok=True)
        golden.write_bytes(produced)
    assert produced == golden.read_bytes(), f"{name} differs from tests/golden; review, then `make golden`"


# The seed with pictures: a local photograph and chart (tests/fixtures/media) and a remote
# photograph. The golden files name the local ones by the digest of the fixtures' bytes.
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "media"
PICTURES = [
    {"url": "media/2026-11-14/b300-node.jpg", "alt": "An eight-GPU B300 node, its cover off",
     "caption": "One node of the kind both hosts ran the benchmark on.",
     "credit": "Jane Roe / Example Agency"},
    {"url": "media/2026-11-14/throughput-chart.png",
     "alt": "Tokens per minute at 8 to 48 concurrent conversations, two hosts",
     "caption": "Throughput under load, as BLACKBOX AI reports it (self-reported)",
     "credit": "Hanging Context, from BLACKBOX AI's figures"},
    {"url": "https://photos.example/agency/2026/dc-aisle.jpg", "alt": "A data centre aisle",
     "caption": "Where the *racks* stand <really>.", "credit": "Photo [Agency] & Co",
     "width": 1200, "height": 800},
]


@pytest.mark.parametrize("name", ["index.html", "index.md", "index.json"])
def test_seed_story_with_pictures_matches_golden(desk, content: Path, tmp_path: Path,
                                                  name: str) -> None:
    data = json.loads(SEED_PATH.read_text(encoding="utf-8"))
    data["images"] = PICTURES
    (content / "stories" / SEED_PATH.name).write_text(json.dumps(data, indent=2),
                                                      encoding="utf-8")
    shutil.copytree(FIXTURES, content / "media")
    out = tmp_path / "public"
    result = desk("build", "--content", str(content), "--out", str(out), "--now", NOW)
    assert result.exit_code == 0, result.stderr
    produced = (out / STORY / name).read_bytes()
    golden = GOLDEN / "pictures" / name
    if os.environ.get("DESK_UPDATE_GOLDEN"):
        golden.parent.mkdir(exist_ok=True)
        golden.write_bytes(produced)
    assert produced == golden.read_bytes(), f"{name} differs from tests/golden; review, then `make golden`"
