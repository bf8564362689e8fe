"""The seed story's three outputs match the reviewed golden files (`make golden` rewrites)."""

from __future__ import annotations

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
