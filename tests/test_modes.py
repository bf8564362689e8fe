"""Build modes, named once: the flags every workflow uses still work, and combinations
that make no sense are usage errors (exit 2) that touch nothing."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from conftest import NOW, tree
from storygen import make_corpus

from desk.build.modes import BuildMode, Flags, Mode, ModeError, build_mode
from desk.build.target import ChangesOnly, FreshStaging, RecycledSpare

REFUSED = {
    ("--no-cache", "--changes-only"): "--changes-only needs the build cache",
    ("--no-cache", "--render-all"): "--no-cache already renders every page",
    ("--drafts", "--changes-only"): "drafts would be published",
}
MODE_FLAGS = ("--no-cache", "--changes-only", "--render-all", "--drafts")


def flags_of(args: tuple[str, ...]) -> Flags:
    return Flags(*(flag in args for flag in MODE_FLAGS))


def test_each_situation_has_one_mode() -> None:
    out = Path("public")
    assert build_mode(Flags()) == BuildMode(Mode.PUBLISH)
    assert build_mode(Flags(changes_only=True)) == BuildMode(Mode.CHANGES, changes_only=True)
    assert build_mode(Flags(render_all=True)) == BuildMode(Mode.REBUILD)
    assert build_mode(Flags(changes_only=True, render_all=True)) == BuildMode(
        Mode.REBUILD, changes_only=True)
    assert build_mode(Flags(no_cache=True)) == BuildMode(Mode.FRESH)
    assert isinstance(build_mode(Flags()).target(out), RecycledSpare)
    assert isinstance(build_mode(Flags(changes_only=True)).target(out), ChangesOnly)
    assert isinstance(build_mode(Flags(changes_only=True, render_all=True)).target(out),
                      ChangesOnly)
    assert isinstance(build_mode(Flags(no_cache=True)).target(out), FreshStaging)
    assert [m.uses_cache for m in map(BuildMode, Mode)] == [True, True, True, False]
    assert [m.keeps_pages for m in map(BuildMode, Mode)] == [True, True, False, False]


@pytest.mark.parametrize("args", [c for n in range(len(MODE_FLAGS) + 1)
                                  for c in itertools.combinations(MODE_FLAGS, n)],
                         ids=lambda a: " ".join(a) or "none")
def test_every_combination_is_a_mode_or_refused_with_its_reason(args: tuple[str, ...]) -> None:
    reasons = [why for pair, why in REFUSED.items() if set(pair) <= set(args)]
    if not reasons:
        assert build_mode(flags_of(args)).mode in Mode
        return
    with pytest.raises(ModeError) as refused:
        build_mode(flags_of(args))
    assert any(why in str(refused.value) for why in reasons)


@pytest.mark.parametrize("pair", list(REFUSED), ids=" ".join)
def test_a_refused_combination_is_a_usage_error_that_changes_nothing(
        desk, tmp_path: Path, pair: tuple[str, str]) -> None:
    content, out, cache = tmp_path / "content", tmp_path / "public", tmp_path / "cache"
    make_corpus(content, 3)
    args = ["--content", str(content), "--out", str(out), "--cache-dir", str(cache),
            "--now", NOW, "--no-search"]
    assert desk("build", *args).exit_code == 0
    before, cached = tree(out), tree(cache)
    result = desk("build", *args, *pair)
    assert result.exit_code == 2
    assert REFUSED[pair] in result.stderr
    assert tree(out) == before and tree(cache) == cached


def test_the_workflows_flags_still_build(desk, tmp_path: Path) -> None:
    content, out, cache = tmp_path / "content", tmp_path / "public", tmp_path / "cache"
    make_corpus(content, 3)
    args = ["--content", str(content), "--out", str(out), "--cache-dir", str(cache),
            "--now", NOW, "--no-search"]
    assert desk("build", *args, "--hold-back").exit_code == 0  # publish.yml
    published = tree(out)
    for flags in (("--hold-back", "--changes-only"),  # publish-s3.yml, hourly
                  ("--hold-back", "--changes-only", "--render-all")):  # and its fallback
        changes = tmp_path / f"changes{len(flags)}"
        result = desk("build", *args[:2], "--out", str(changes), *args[4:], *flags)
        assert result.exit_code == 0, result.stderr
    assert desk("build", *args, "--render-all").exit_code == 0
    assert tree(out) == published  # rendering everything again gives the same site
    fresh = tmp_path / "fresh"
    assert desk("build", *args[:2], "--out", str(fresh), *args[4:], "--no-cache").exit_code == 0
    assert tree(fresh) == published
