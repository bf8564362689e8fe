"""A story file's git blob id as a second identity of its bytes, for a fresh clone (new
stats everywhere): trusted only for files git holds unchanged, and every build still
byte-equal to one from nothing."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from conftest import tree
from savedstate import inspected_rows, state_files
from storygen import REPO, make_corpus, make_story, write_story

from desk.build.cache import BuildCache, FileRecord, InspectionCache
from desk.build.keys import check_key
from desk.build.pipeline import build
from desk.build.records import Stat, file_stat
from desk.build.survey import SURVEYED, EarlySurvey, Survey, survey
from desk.config import Config, load_config
from desk.content.catalog import Clock
from desk.content.findings import Finding
from desk.content.gitblobs import CleanFiles, GitListing, blob_id, checked_out_since, clean_blobs
from desk.content.history import UrlHistory, read_history_file
from desk.content.loader import content_files

NOW = datetime(2026, 11, 11, tzinfo=UTC)


def git(folder: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(folder), "-c", "user.name=Desk",
                           "-c", "user.email=desk@example.org", *args],
                          capture_output=True, text=True, check=True)
    return done.stdout


def committed(content: Path) -> None:
    git(content, "init", "-q")
    git(content, "add", "-A")
    git(content, "commit", "-q", "-m", "stories")


def fresh_clone(content: Path) -> None:
    """What a runner checks out: the same commit at the same path, every stat new."""
    origin = content.with_name("origin")
    content.rename(origin)
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(origin), str(content)],
                   check=True)
    shutil.rmtree(origin)


def same_size_edit(path: Path) -> None:
    """Change a story's bytes but not its size (the headline's first letter)."""
    text = path.read_text(encoding="utf-8")
    start = text.index('"headline": "') + len('"headline": "')
    path.write_text(text[:start] + "Q" + text[start + 1:], encoding="utf-8")


def setting(tmp_path: Path, content: Path, out: str) -> Config:
    return load_config(REPO / "pyproject.toml", {
        "cache_dir": tmp_path / "cache", "search": False, "content_dir": content,
        "output_dir": tmp_path / out})


def from_nothing(tmp_path: Path, content: Path, history: UrlHistory | None = None
                 ) -> dict[str, bytes]:
    """The site built from nothing (given the URL history the published site had)."""
    config = setting(tmp_path, content, "from-nothing")
    assert build(config, Clock(NOW), cache=BuildCache(history=history)).ok
    return tree(config.output_dir)


def test_clean_blobs_name_only_the_files_git_holds_unchanged(tmp_path: Path) -> None:
    content = tmp_path / "content"
    names = ["clean", "edited", "assumed", "skipped", "executable"]
    for name in names:
        (content / "stories").mkdir(parents=True, exist_ok=True)
        (content / "stories" / f"{name}.json").write_text(f'{{"name": "{name}"}}\n')
    # Names beyond ASCII, one of them no UTF-8 at all: held as the file system names them.
    for raw in (b"caf\xc3\xa9.json", b"caf\xe9.json"):
        (content / "stories" / os.fsdecode(raw)).write_text("{}\n")
    (content / "stories/executable.json").chmod(0o755)
    os.symlink("clean.json", content / "stories/link.json")
    # A symlink (not listed) whose name ends as an entry of git's listing would, claiming
    # other bytes for stories/clean.json: only whole entries count.
    posing = content / "stories" / f"x H 100644 {'f' * 40} 0\tstories"
    posing.mkdir()
    os.symlink("../clean.json", posing / "clean.json")
    committed(content)
    stories = content / "stories"
    same = (stories / "edited.json").read_text().replace("edited", "EDITED")
    (stories / "edited.json").write_text(same)
    git(content, "update-index", "--assume-unchanged", "stories/assumed.json")
    git(content, "update-index", "--skip-worktree", "stories/skipped.json")
    for name in ("assumed", "skipped"):
        (stories / f"{name}.json").write_text("{}\n")
    (stories / "untracked.json").write_text("{}\n")

    blobs = dict(clean_blobs(content))
    assert sorted(blobs) == sorted([str(stories / "clean.json"), str(stories / "executable.json"),
                                    *(str(stories / os.fsdecode(raw))
                                      for raw in (b"caf\xc3\xa9.json", b"caf\xe9.json"))])
    for path, blob in blobs.items():
        assert blob == blob_id(Path(path).read_bytes())
        assert blob == git(content, "hash-object", path).strip()
    assert list(clean_blobs(tmp_path / "nowhere")) == []
    other = tmp_path / "other"
    (other / "stories").mkdir(parents=True)
    (other / "stories/clean.json").write_text("{}\n")  # same name, other bytes
    committed(other)
    with pytest.MonkeyPatch.context() as env:  # git pointed at another repository
        env.setenv("GIT_DIR", str(other / ".git"))
        env.setenv("GIT_WORK_TREE", str(other))
        assert dict(clean_blobs(content)) == blobs
    outside = tmp_path / "outside"
    shutil.copytree(content, outside, ignore=shutil.ignore_patterns(".git"), symlinks=True)
    assert list(clean_blobs(outside / "stories")) == []
    clean = CleanFiles(blobs.items())
    with GitListing(content) as listing:  # the same numbers, undecoded
        assert CleanFiles.of_listing(listing)._held == clean._held
        # Named by the strings held already, where there are: the same mapping.
        (first, _), *_ = blobs.items()
        held = {first: "".join(first)}  # an equal string, not the same one
        named = listing.clean(held)
        assert named == blobs
        assert next(name for name in named if name == first) is held[first]
    for path, blob in blobs.items():
        assert clean.holds(path, blob)
        assert not clean.holds(path, "0" * 40)  # other bytes at that path
    # An edited file is not held, not even with the blob id its commit gave it.
    assert not clean.holds(str(stories / "edited.json"), blob_id(b'{"name": "edited"}\n'))


def test_a_blob_id_vouches_only_for_a_file_git_holds_unchanged(tmp_path: Path) -> None:
    """A record whose digest no longer matches the bytes is recalled only through git:
    so a recall shows which identity decided."""
    content = tmp_path / "content"
    make_corpus(content, 4)
    committed(content)
    config = setting(tmp_path, content, "public")
    cache = BuildCache()
    assert build(config, Clock(NOW), cache=cache).ok
    state = cache.state
    paths = sorted(state.inspected)
    assert all(len(state.inspected[p].blob) == 40 for p in paths)
    fresh_clone(content)
    same_size_edit(Path(paths[1]))  # modified in the work tree, not committed
    git(content, "update-index", "--assume-unchanged", os.path.relpath(paths[2], content))
    same_size_edit(Path(paths[2]))
    for path in paths:  # a digest that the bytes would refute
        known = state.inspected[path]
        assert known.story is not None
        state.inspected[path] = dataclasses.replace(
            known, story=dataclasses.replace(known.story, digest="0" * 64))
    recall = InspectionCache(state, check_key(config), content=content).recall
    assert recall(paths[0], file_stat(paths[0])) is not None  # git vouches
    assert recall(paths[1], file_stat(paths[1])) is None  # git says modified
    assert recall(paths[2], file_stat(paths[2])) is None  # git does not look: no trust
    assert InspectionCache(state, check_key(config)).recall(  # no git asked: bytes decide
        paths[3], file_stat(paths[3])) is None


def built_then_cloned(tmp_path: Path) -> tuple[Path, Config, BuildCache, str]:
    """Two stories committed and built, then cloned afresh: the content, the settings,
    the cache of the build and the path of its first story file."""
    content = tmp_path / "content"
    make_corpus(content, 2)
    committed(content)
    config = setting(tmp_path, content, "public")
    cache = BuildCache()
    assert build(config, Clock(NOW), cache=cache).ok
    fresh_clone(content)
    return content, config, cache, sorted(cache.state.inspected)[0]


def test_a_record_with_another_blob_or_size_is_not_recalled(tmp_path: Path) -> None:
    content, config, cache, path = built_then_cloned(tmp_path)
    known = cache.state.inspected[path]
    assert known.story is not None
    wrong = dataclasses.replace(known.story, digest="0" * 64)
    stat = file_stat(path)
    assert stat is not None
    saved, blob = known.stat, known.blob
    mtime, size, ino = saved
    for record in (FileRecord(saved, wrong, (), "f" * 40),
                   FileRecord(Stat(mtime, size + 1, ino), wrong, (), blob)):
        cache.state.inspected[path] = record
        assert InspectionCache(cache.state, check_key(config), content=content).recall(
            path, stat) is None


@pytest.mark.parametrize("run", ["build", "command"])
def test_fresh_clone_with_local_changes_builds_as_from_nothing(tmp_path: Path, run: str
                                                               ) -> None:
    """The hourly run on a fresh clone, with the kinds of change git must not hide: an
    edit not committed (same size), an untracked story, a deleted one, one edit git was
    told not to look at. `desk build` (a process of its own) starts git's listing
    before it reads the saved state, as the checkout is newer than the state."""
    content = tmp_path / "content"
    make_corpus(content, 12)
    committed(content)
    config = setting(tmp_path, content, "public")
    assert build(config, Clock(NOW)).ok
    fresh_clone(content)
    stories = sorted(content.rglob("story-number-*.json"))
    same_size_edit(stories[1])
    git(content, "update-index", "--assume-unchanged", os.path.relpath(stories[2], content))
    same_size_edit(stories[2])
    stories[3].unlink()
    write_story(content, make_story(40, published_at=datetime(2026, 11, 10, 22, tzinfo=UTC)))
    history, _ = read_history_file(config.output_dir / ".well-known/desk-urls.json")
    shutil.rmtree(config.output_dir)  # the runner has no site, only the cache

    if run == "build":
        assert build(config, Clock(NOW)).ok
    else:
        (state,) = state_files(tmp_path / "cache")
        assert checked_out_since(content, state)
        subprocess.run([sys.executable, "-m", "desk", "build", "-q",
                        "--config", str(REPO / "pyproject.toml"), "--no-search",
                        "--content", str(content), "--out", str(config.output_dir),
                        "--cache-dir", str(tmp_path / "cache"), "--now", NOW.isoformat()],
                       check=True)
        assert not checked_out_since(content, state)  # saved after the clone
    assert tree(config.output_dir) == from_nothing(tmp_path, content, history)
    for story in stories[1:3]:
        page = tree(config.output_dir)
        assert any(b'"headline": "Q' in data for name, data in page.items()
                   if name.endswith("index.json") and story.stem in name)


def test_content_outside_git_and_a_broken_state_build_as_from_nothing(tmp_path: Path) -> None:
    content = tmp_path / "content"
    make_corpus(content, 6)
    config = setting(tmp_path, content, "public")
    assert build(config, Clock(NOW)).ok
    copy = tmp_path / "copy"
    shutil.copytree(content, copy)  # new stats, no git
    shutil.rmtree(content)
    copy.rename(content)
    same_size_edit(sorted(content.rglob("story-number-*.json"))[0])
    assert build(config, Clock(NOW)).ok
    assert tree(config.output_dir) == from_nothing(tmp_path, content)
    for state in state_files(tmp_path / "cache"):  # half written
        state.write_bytes(state.read_bytes()[: len(state.read_bytes()) // 2])
    same_size_edit(sorted(content.rglob("story-number-*.json"))[1])
    assert build(config, Clock(NOW)).ok
    assert tree(config.output_dir) == from_nothing(tmp_path, content)


def _inspected_rows(cache_dir: Path) -> dict[str, tuple[Any, ...]]:
    (path,) = state_files(cache_dir)
    return inspected_rows(path)


def test_hour_after_hour_on_fresh_clones_rewrites_no_row_git_vouches_for(
        tmp_path: Path) -> None:
    """A fresh runner's hour: the files git holds unchanged are recalled on git's word
    without a row of the state rewritten; the files that changed are inspected and saved
    anew; every hour's site is the one a build from nothing makes."""
    content = tmp_path / "content"
    make_corpus(content, 10)
    committed(content)
    config = setting(tmp_path, content, "public")
    assert build(config, Clock(NOW)).ok
    before = _inspected_rows(tmp_path / "cache")
    stories = sorted(content.rglob("story-number-*.json"))
    for hour in range(2):
        fresh_clone(content)
        same_size_edit(stories[hour])
        write_story(content, make_story(40 + hour,
                                        published_at=datetime(2026, 11, 10, 22, tzinfo=UTC)))
        git(content, "add", "-A")
        git(content, "commit", "-q", "-m", f"hour {hour}")
        history, _ = read_history_file(config.output_dir / ".well-known/desk-urls.json")
        shutil.rmtree(config.output_dir)  # the runner has the cache, not the site
        assert build(config, Clock(NOW)).ok
        assert tree(config.output_dir) == from_nothing(tmp_path, content, history)
        shutil.rmtree(tmp_path / "from-nothing")
    after = _inspected_rows(tmp_path / "cache")
    edited = {str(path) for path in stories[:2]}
    untouched = set(before) - edited
    assert untouched and {path: after[path] for path in untouched} == {
        path: before[path] for path in untouched}
    for path in edited:  # read again, so saved under the stat and blob of their new bytes
        assert after[path] != before[path]
        assert after[path][3] == blob_id(Path(path).read_bytes())
    assert len(after) == len(before) + 2


def test_a_checkout_that_converts_line_endings_builds_as_from_nothing(tmp_path: Path) -> None:
    """git calls a file clean when it matches its blob after converting its line endings
    (core.autocrlf): the bytes on the disk are then not the blob's. A state made on a
    checkout without the conversion, used on one with it: a story of one line (the same
    bytes either way, so git is asked) comes first, then stories whose line breaks grew."""
    content = tmp_path / "content"
    make_corpus(content, 6)
    stories = sorted(content.rglob("story-number-*.json"))
    stories[0].write_text(json.dumps(json.loads(stories[0].read_text(encoding="utf-8"))),
                          encoding="utf-8")
    committed(content)
    config = setting(tmp_path, content, "public")
    assert build(config, Clock(NOW)).ok
    origin = content.with_name("origin")
    content.rename(origin)
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", "--config", "core.autocrlf=true",
                    str(origin), str(content)], check=True)
    shutil.rmtree(origin)
    assert b"\r\n" in stories[1].read_bytes() and b"\r" not in stories[0].read_bytes()
    assert git(content, "ls-files", "--modified") == ""  # clean, in git's view
    history, _ = read_history_file(config.output_dir / ".well-known/desk-urls.json")
    shutil.rmtree(config.output_dir)

    assert build(config, Clock(NOW)).ok
    assert tree(config.output_dir) == from_nothing(tmp_path, content, history)


def test_a_checkout_is_newer_than_the_state_only_until_a_build_saves_it(tmp_path: Path
                                                                          ) -> None:
    """When `desk build` starts git's listing early: after a clone or a commit newer than
    the saved state, in the repository's own folder or one below it; never with no state,
    nor outside git."""
    content = tmp_path / "site" / "content"
    make_corpus(content, 2)
    state = tmp_path / "state.sqlite"
    assert not checked_out_since(content, state)  # nothing saved
    state.write_bytes(b"")
    assert not checked_out_since(content, state)  # no repository
    committed(tmp_path / "site")
    os.utime(state, ns=(0, 0))
    assert checked_out_since(content, state)
    assert checked_out_since(tmp_path / "site", state)
    state.touch()
    os.utime(tmp_path / "site/.git/index", ns=(1, 1))
    assert not checked_out_since(content, state)


def test_a_survey_finds_what_the_inspection_would_look_at_itself(tmp_path: Path) -> None:
    """The survey `desk build` takes while it reads the saved state: the same files, stats
    and clean blobs as the walk, file_stat and git's listing, forked or not: with an edit
    git sees, an untracked story, a hidden file, a draft and a symlink out of the content."""
    content = tmp_path / "content"
    make_corpus(content, 5)
    committed(content)
    stories = sorted(content.rglob("story-number-*.json"))
    same_size_edit(stories[0])
    write_story(content, make_story(40, published_at=datetime(2026, 11, 10, 22, tzinfo=UTC)))
    (content / "stories" / ".hidden.json").write_text("{}", encoding="utf-8")
    (content / "drafts").mkdir()
    shutil.copy(stories[1], content / "drafts" / "draft.json")
    (tmp_path / "elsewhere.json").write_text("{}", encoding="utf-8")
    (content / "stories" / "out.json").symlink_to(tmp_path / "elsewhere.json")
    walked = {}
    for folder in SURVEYED:
        findings: list[Finding] = []
        walked[folder] = (content_files(content, folder, findings), findings)
    assert walked["stories"][1] and walked["drafts"][0]  # the symlink's finding; the draft
    stats = {p: file_stat(p) for paths, _ in walked.values() for p in paths}
    clean = dict(clean_blobs(content))
    assert str(stories[0]) not in clean and str(stories[1]) in clean

    with EarlySurvey(content, ask_git=True) as early:
        forked = early.result()
    with EarlySurvey(content, ask_git=True, fork=False) as early:  # one process (--jobs 1)
        here = early.result()
    assert forked == here == Survey(walked, stats, clean)
    assert survey(content, None) == Survey(walked, stats, None)  # git not asked


def test_a_survey_compared_with_the_saved_state_names_the_files_to_look_at(
        tmp_path: Path) -> None:
    """A fresh runner's survey, given the saved state's file, vouches for every file whose
    stat or git's word keeps its saved inspection, forked or not: the inspection recalls
    those without a look and looks at the others (an edit git sees, a new story, one
    whose line endings changed its size); a survey of another state is not taken, and the
    build ends as one from nothing."""
    content = tmp_path / "content"
    make_corpus(content, 4)
    committed(content)
    config = setting(tmp_path, content, "public")
    assert build(config, Clock(NOW)).ok  # its state saved in the cache folder
    fresh_clone(content)
    stories = sorted(str(p) for p in content.rglob("story-number-*.json"))
    same_size_edit(Path(stories[0]))
    grown = Path(stories[1])
    grown.write_bytes(grown.read_bytes() + b"\n")  # git: modified, and another size
    added = write_story(content, make_story(40, published_at=datetime(2026, 11, 10, 22,
                                                                      tzinfo=UTC)))
    state_file = BuildCache.file_for(config.cache_dir, config.output_dir)
    look = {stories[0], stories[1], str(added)}

    with GitListing(content) as listing:
        here = survey(content, listing, state_file)
    with EarlySurvey(content, ask_git=True, state=state_file) as early:
        forked = early.result()
    assert forked == here and here.changed == look
    assert set(here.stats) == look and set(here.clean or ()) <= look
    with GitListing(content) as listing:
        whole = survey(content, listing)
    assert whole.changed is None and here.files == whole.files

    cache = BuildCache.saved_for(config.cache_dir, config.output_dir)
    inspection = InspectionCache(cache.state, check_key(config), content=content,
                                 survey=here)
    for path in stories[2:]:
        known = cache.state.inspected[path]
        assert known.stat != file_stat(path)  # touched by the clone: git vouched
        assert inspection.unchanged(path) == (known.story, known.findings)
    assert all(inspection.unchanged(path) is None for path in look)
    other = dataclasses.replace(here, index=tmp_path / "another.sqlite")
    assert InspectionCache(cache.state, check_key(config), content=content,
                           survey=other).unchanged(stories[2]) is None

    history, _ = read_history_file(config.output_dir / ".well-known/desk-urls.json")
    shutil.rmtree(config.output_dir)
    result = subprocess.run([sys.executable, "-m", "desk", "build", "--config",
                             str(REPO / "pyproject.toml"), "--content", str(content),
                             "--out", str(config.output_dir), "--cache-dir",
                             str(config.cache_dir), "--now", NOW.isoformat(), "--no-search",
                             "--jobs", "2"], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert tree(config.output_dir) == from_nothing(tmp_path, content, history)


def test_the_inspection_takes_the_survey_s_word_and_looks_itself_without_one(
        tmp_path: Path) -> None:
    """A survey's stats and blob ids are what the inspection goes by (a survey that says a
    file edited since is clean with its old blob recalls the old inspection); a survey
    whose process died is none, and the inspection looks for itself."""
    content, config, cache, path = built_then_cloned(tmp_path)
    known = cache.state.inspected[path]
    same_size_edit(Path(path))
    inspection = InspectionCache(cache.state, check_key(config), content=content)
    assert inspection.recall(path, inspection.stat(path)) is None  # git says modified
    stats = {path: file_stat(path)}
    told = Survey({"stories": ([path], [])}, stats, {path: known.blob})
    inspection = InspectionCache(cache.state, check_key(config), content=content, survey=told)
    assert inspection.files(content, "stories", []) == [path]
    assert inspection.recall(path, inspection.stat(path)) == (known.story, known.findings)

    with EarlySurvey(content, ask_git=True) as early:
        process, _ = (early._worker or pytest.fail("a survey is forked on this platform")).worker
        process.kill()
        assert early.result() is None
