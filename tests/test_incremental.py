"""Rebuilds that reuse the last build's unchanged files give exactly what a fresh build gives."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from conftest import tree
from searchindex import fragments, live_entries, without_search
from storygen import REPO, corpus_site, make_corpus, make_story, write_story

import desk.build.pipeline
from desk.build.cache import BuildCache
from desk.build.pipeline import build
from desk.config import load_config
from desk.content.catalog import Clock
from desk.content.history import read_history_file
from desk.content.loader import LoadedStory

NOW = datetime(2026, 11, 11, tzinfo=UTC)


def fresh(content: Path, tmp_path: Path, name: str, **extra: object) -> dict[str, bytes]:
    """A build from nothing but the content and the URL history of tmp_path/public (which
    remembers the URLs of deleted stories)."""
    config = load_config(REPO / "pyproject.toml", {
        "cache_dir": tmp_path / "cache", "search": False, "content_dir": content,
                                                   "output_dir": tmp_path / name, **extra})
    history, _ = read_history_file(tmp_path / "public/.well-known/desk-urls.json")
    assert build(config, Clock(NOW), cache=BuildCache(history=history)).ok
    return tree(config.output_dir)


def test_edits_additions_and_deletions_match_a_fresh_build(tmp_path: Path) -> None:
    content = tmp_path / "content"
    make_corpus(content, 30)
    config = load_config(REPO / "pyproject.toml", {
        "cache_dir": tmp_path / "cache", "search": False, "content_dir": content,
                                                   "output_dir": tmp_path / "public",
                                                   "page_size": 4})
    first = build(config, Clock(NOW))
    assert first.ok and first.reused == 0

    unchanged = build(config, Clock(NOW))
    assert unchanged.ok and unchanged.reused > 30

    story = next(content.rglob("story-number-7.json"))
    write_story(content, make_story(7, published_at=datetime(2026, 11, 10, 7, 59, tzinfo=UTC),
                                    newsroom="climate", headline="Edited headline"),
                story.name)
    write_story(content, make_story(31, published_at=datetime(2026, 11, 10, 20, tzinfo=UTC)))
    next(content.rglob("story-number-3.json")).unlink()
    edited = build(config, Clock(NOW))
    assert edited.ok and edited.reused > 0
    assert tree(config.output_dir) == fresh(content, tmp_path, "fresh1", page_size=4)
    assert b"Edited headline" in tree(config.output_dir)["stories/2026-11-10/story-number-7/index.html"]


def test_template_and_static_changes_rebuild_everything(tmp_path: Path) -> None:
    content = tmp_path / "content"
    make_corpus(content, 8)
    templates = tmp_path / "templates"
    static = tmp_path / "static"
    shutil.copytree(REPO / "templates", templates)
    shutil.copytree(REPO / "static", static)
    overrides = {"search": False, "cache_dir": tmp_path / "cache", "content_dir": content, "output_dir": tmp_path / "public",
                 "templates_dir": templates, "static_dir": static}
    config = load_config(REPO / "pyproject.toml", overrides)
    assert build(config, Clock(NOW)).ok
    (templates / "_macros.html").write_text(
        (templates / "_macros.html").read_text().replace('class="card', 'class="card changed'))
    (static / "site.css").write_text("body { color: black }\n")
    again = build(config, Clock(NOW))
    assert again.ok and again.reused == 0
    assert tree(config.output_dir) == fresh(content, tmp_path, "fresh2", **{
        k: v for k, v in overrides.items() if k != "output_dir"})


def test_serve_memory_skips_unchanged_files(tmp_path: Path) -> None:
    content = tmp_path / "content"
    make_corpus(content, 10)
    config = load_config(REPO / "pyproject.toml", {
        "cache_dir": tmp_path / "cache", "search": False, "content_dir": content,
                                                   "output_dir": tmp_path / "site"})
    cache = BuildCache()
    assert build(config, Clock(NOW), cache=cache).ok
    assert len(cache.state.inspected) == 10
    parsed_before = dict(cache.state.inspected)
    write_story(content, make_story(2, published_at=datetime(2026, 11, 10, 6, 34, tzinfo=UTC),
                                    newsroom="markets", dek="New dek"), "story-number-2.json")
    report = build(config, Clock(NOW), cache=cache)
    assert report.ok
    changed = [p for p in cache.state.inspected if cache.state.inspected[p] is not parsed_before[p]]
    assert [Path(p).name for p in changed] == ["story-number-2.json"]
    assert not list(config.cache_dir.glob("site-*"))  # an unsaved cache writes nothing
    assert tree(config.output_dir) == fresh(content, tmp_path, "fresh3")


def test_parallel_build_equals_single_process_build(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    content = tmp_path / "content"
    make_corpus(content, 210)  # past PARALLEL_MIN_FILES: the files are inspected in workers too
    configs = [load_config(REPO / "pyproject.toml", {
        "cache_dir": tmp_path / f"cache-{name}", "search": False, "content_dir": content,
        "output_dir": tmp_path / name, "page_size": 4}) for name in ("one", "two")]
    single = build(configs[0], Clock(NOW), jobs=1)
    assert single.ok
    # Fewer pages around the stories than a real site has: share them out all the same,
    # and count the times they are.
    monkeypatch.setattr("desk.build.pipeline.PARALLEL_MIN_UNITS", 10)
    shared: list[int] = []
    start = desk.build.pipeline.start_unit_workers
    monkeypatch.setattr("desk.build.pipeline.start_unit_workers",
                        lambda chunks, *args, **named: shared.append(len(chunks))
                        or start(chunks, *args, **named))
    report = build(configs[1], Clock(NOW), jobs=3)
    assert shared == [2]  # two workers beside this process
    assert report.ok and report.files == len(tree(configs[1].output_dir)) - 1  # but the marker
    assert tree(configs[0].output_dir) == tree(configs[1].output_dir)
    assert report.findings == single.findings and report.published == single.published
    # What the forked build recorded of its units lets the next build keep every one of
    # them, as after a build in one process.
    again = [build(configs[0], Clock(NOW), jobs=1), build(configs[1], Clock(NOW), jobs=3)]
    assert again[0].reused == again[1].reused > len(single.published)
    assert tree(configs[0].output_dir) == tree(configs[1].output_dir)
    # Every page again, shared out in the recycled spare folder (whose files the live site
    # may share: replaced, never written through), is a build from nothing.
    retitled = load_config(REPO / "pyproject.toml", {
        "cache_dir": tmp_path / "cache-two", "search": False, "content_dir": content,
        "output_dir": tmp_path / "two", "page_size": 4, "title": "Another desk"})
    report = build(retitled, Clock(NOW), jobs=3)
    assert report.ok and report.reused == 0 and shared == [2, 2]
    assert tree(retitled.output_dir) == fresh(content, tmp_path, "fresh-retitled",
                                              page_size=4, title="Another desk")


def test_forked_map_keeps_order_and_reports_a_failing_worker() -> None:
    from desk.build.parallel import map_forked

    items = list(range(1000))
    assert map_forked(str, items, 3) == [str(i) for i in items]

    def fails_late(n: int) -> int:
        if n == 999:
            raise ValueError("story 999 is broken")
        return n

    with pytest.raises(RuntimeError, match="story 999 is broken"):
        map_forked(fails_late, items, 2)


def test_a_forked_function_ends_once_its_result_is_made_before_it_is_read() -> None:
    """Its result (far more than a pipe holds) waits outside the process, which need not
    stay alive, holding its memory, until the parent reads it."""
    from desk.build.parallel import result_of, start_forked

    large = {f"stories/{n}.json": f"{n:040x}" for n in range(20_000)}
    forked = start_forked(lambda: large)
    process, _ = forked.worker
    process.join(timeout=60)
    assert process.exitcode == 0, "the forked process waited for its result to be read"
    assert result_of(forked) == (True, large)

    def fails() -> None:
        raise ValueError("no survey")

    done, problem = result_of(start_forked(fails))
    assert not done and "no survey" in problem


def test_page_workers_write_their_units_and_report_what_failed(tmp_path: Path) -> None:
    from desk.build.parallel import RenderFailed, collect, start_unit_workers
    from desk.content.findings import Finding
    from desk.render import Output

    def page(n: int) -> Callable[[], list[Output]]:
        return lambda: [Output(f"/p/{n}/", b"<p>%d</p>" % n), Output(f"/p/{n}/index.json", b"{}")]

    def describe(exc: Exception) -> Finding | None:
        return Finding("templates/page.html", "", "template", str(exc))

    workers = start_unit_workers([[page(1), page(2)], [page(3)]], describe, tmp_path)
    assert collect(workers) == [(("p/1/index.html", "p/1/index.json"), 10),
                                (("p/2/index.html", "p/2/index.json"), 10),
                                (("p/3/index.html", "p/3/index.json"), 10)]
    assert (tmp_path / "p/3/index.html").read_bytes() == b"<p>3</p>"

    def broken() -> list[Output]:
        raise ValueError("no such page")

    workers = start_unit_workers([[page(4)], [broken, page(5)]], describe, tmp_path / "b")
    with pytest.raises(RenderFailed) as failed:
        collect(workers)
    assert failed.value.finding == describe(ValueError("no such page"))
    assert not (tmp_path / "b/p/5").exists()  # the worker stopped at its failure


def test_a_page_worker_never_writes_through_to_the_live_site(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker writes before the parent claims its files: even two units writing one file
    (a bug, reported as such) must leave the live site as it was."""
    from desk.build.keys import KeyMaker
    from desk.build.ledger import Ledger
    from desk.build.pipeline import Plan, Workers
    from desk.build.records import UnitRecord
    from desk.build.writer import Staging, WriteError
    from desk.render import Output
    from desk.render.context import Unit

    out = tmp_path / "public"
    live = Staging(out)
    live.write([Output("/a/", b"live page")])
    live.swap_in("site-1")
    keys = KeyMaker("site")
    writer = Staging(out)  # a fresh staging folder: a kept unit's file is a link to the live one
    ledger = Ledger({"/a/": UnitRecord.of("/a/", keys.key(("a",)), ("a/index.html",))}, writer)
    monkeypatch.setattr("desk.build.pipeline.PARALLEL_MIN_UNITS", 1)
    units = [Unit("/a/", ("a",), lambda: [Output("/a/", b"never")]),  # kept: linked
             Unit("/b/", ("b",), lambda: [Output("/b/", b"b")]),  # this process's share
             Unit("/c/", ("c",), lambda: [Output("/a/", b"overwritten")])]  # the worker's
    with pytest.raises(WriteError, match="two outputs for /a/index.html"):
        Plan(keys, ledger, writer).write(iter(units), Workers(jobs=2), describe=lambda exc: None)
    writer.discard()
    assert (out / "a/index.html").read_bytes() == b"live page"


def test_template_error_in_a_worker_is_reported_and_changes_nothing(tmp_path: Path) -> None:
    content = tmp_path / "content"
    make_corpus(content, 160)
    templates = tmp_path / "templates"
    shutil.copytree(REPO / "templates", templates)
    config = load_config(REPO / "pyproject.toml", {
        "cache_dir": tmp_path / "cache", "search": False, "content_dir": content,
                                                   "output_dir": tmp_path / "out",
                                                   "templates_dir": templates})
    assert build(config, Clock(NOW), jobs=2).ok
    before = tree(config.output_dir)
    # Fails only for the oldest stories, which come last and go to a worker.
    (templates / "story.md.jinja").write_text(
        "{% if view.story.id < '10010' %}{{ view.story.nope.nope }}{% endif %}")
    report = build(config, Clock(NOW), jobs=2)
    assert not report.ok
    assert report.errors[0].format().startswith(f"{templates / 'story.md.jinja'}:1:1: template error")
    assert tree(config.output_dir) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "content", "out", "templates"]


def test_config_edit_rebuilds_and_no_cache_leaves_no_memory(tmp_path: Path) -> None:
    content = tmp_path / "content"
    make_corpus(content, 8)
    base = {"cache_dir": tmp_path / "cache", "content_dir": content,
            "output_dir": tmp_path / "public"}
    assert build(load_config(REPO / "pyproject.toml", base), Clock(NOW)).ok
    renamed = load_config(REPO / "pyproject.toml", {**base, "title": "Another Desk"})
    report = build(renamed, Clock(NOW))
    assert report.ok and report.reused == 0
    assert b"Another Desk" in tree(renamed.output_dir)["index.html"]
    shutil.rmtree(tmp_path / "cache")
    assert build(renamed, Clock(NOW), cache=BuildCache()).ok
    assert not (tmp_path / "cache").exists()


def test_search_bundles_are_kept_until_their_stories_change(tmp_path: Path) -> None:
    """Sealed bundles stay as they are; new stories go to the fresh bundle. How the index
    is split depends on the history of builds, so an incremental build is compared with
    one from nothing by everything but the index, and by what the index finds."""
    content = tmp_path / "content"
    make_corpus(content, 6)
    limits = {"search_bundle_pages": 4, "search_fresh_pages": 2}
    config = load_config(REPO / "pyproject.toml", {"cache_dir": tmp_path / "cache",
                                                   "content_dir": content,
                                                   "output_dir": tmp_path / "public", **limits})
    assert build(config, Clock(NOW)).ok
    entries = sorted(config.output_dir.glob("pagefind/s-*/pagefind-entry.json"))
    assert len(entries) == 2 and not (config.output_dir / "pagefind/fresh").exists()
    inodes = [entry.stat().st_ino for entry in entries]
    assert build(config, Clock(NOW)).ok
    assert [entry.stat().st_ino for entry in entries] == inodes  # linked, not indexed again
    write_story(content, make_story(40, published_at=datetime(2026, 11, 10, 9, tzinfo=UTC),
                                    headline="Brand new"))
    assert build(config, Clock(NOW)).ok
    assert [entry.stat().st_ino for entry in entries] == inodes
    fresh_bundle = fragments(config.output_dir / "pagefind/fresh")
    assert [page["meta"]["title"] for page in fresh_bundle] == ["Brand new"]
    files = tree(config.output_dir)
    reference = fresh(content, tmp_path, "fresh4", search=True, **limits)
    assert without_search(files) == without_search(reference)
    assert live_entries(config.output_dir) == live_entries(tmp_path / "fresh4")
    assert len(live_entries(config.output_dir)) == 7


def test_remembered_check_findings_follow_related_stories(tmp_path: Path) -> None:
    content = tmp_path / "content"
    related = [{"url": "https://hangingcontext.com/stories/2026-11-14/story-number-2/",
                "headline": "Two"}]
    write_story(content, make_story(1, related=related))
    config = load_config(REPO / "pyproject.toml", {"cache_dir": tmp_path / "cache",
                                                   "search": False, "content_dir": content,
                                                   "output_dir": tmp_path / "site"})
    cache = BuildCache()
    first = build(config, Clock(NOW.replace(day=15)), cache=cache)
    assert [f.code for f in first.warnings] == ["related-missing"]
    write_story(content, make_story(2))
    second = build(config, Clock(NOW.replace(day=15)), cache=cache)
    assert [f.code for f in second.warnings] == []
    again = build(config, Clock(NOW.replace(day=15)), cache=cache)
    assert again.findings == second.findings


def test_every_kind_of_change_through_the_recycled_spare_matches_a_fresh_build(
        tmp_path: Path) -> None:
    """The cached build path used by `desk build` (memory on disk, the previous site recycled
    as the staging folder) after each kind of change gives exactly what a build from nothing
    gives, and never writes through into the live site."""
    content = tmp_path / "content"
    make_corpus(content, 110)  # enough for forked render workers
    templates = tmp_path / "templates"
    shutil.copytree(REPO / "templates", templates)
    settings: dict[str, object] = {"cache_dir": tmp_path / "cache", "search": False,
                                   "content_dir": content, "templates_dir": templates,
                                   "page_size": 5}
    spare = tmp_path / ".public.desk-spare"

    def change_story() -> None:
        write_story(content, make_story(5, published_at=datetime(2026, 11, 10, 5, tzinfo=UTC),
                                        headline="Edited five"), "story-number-5.json")

    def add_story() -> None:
        write_story(content, make_story(60, published_at=datetime(2026, 11, 10, 23, tzinfo=UTC)))

    def remove_story() -> None:
        next(content.rglob("story-number-9.json")).unlink()

    def edit_template() -> None:
        for name in ("edition.html", "story.html"):
            page = templates / name
            page.write_text(page.read_text().replace("{% block main %}",
                                                     "{% block main %}<p>edited</p>"))

    def edit_config() -> None:
        settings["title"] = "Another Desk"

    steps = [("nothing", lambda: None), ("story edited", change_story),
             ("story added", add_story), ("story removed", remove_story),
             ("template edited", edit_template), ("config edited", edit_config),
             ("nothing again", lambda: None)]
    config = load_config(REPO / "pyproject.toml", {**settings, "output_dir": tmp_path / "public"})
    assert build(config, Clock(NOW)).ok
    live = tree(config.output_dir)
    for name, change in steps:
        change()
        config = load_config(REPO / "pyproject.toml",
                             {**settings, "output_dir": tmp_path / "public"})
        report = build(config, Clock(NOW), jobs=2)
        assert report.ok, name
        if name != "nothing":
            # The spare is the site before this build, untouched by it.
            assert tree(spare) == live, name
        live = tree(config.output_dir)
        reference = load_config(REPO / "pyproject.toml",
                                {**settings, "output_dir": tmp_path / "reference"})
        assert build(reference, Clock(NOW), cache=BuildCache()).ok
        assert live == tree(reference.output_dir), name
    edition = next(path for path in live if path.startswith("editions/2026"))
    assert b"Another Desk" in live["index.html"] and b"<p>edited</p>" in live[edition]
    assert b"Edited five" in live["stories/2026-11-10/story-number-5/index.html"]
    assert b"<p>edited</p>" in live["stories/2026-11-10/story-number-5/index.html"]


def test_the_loose_files_of_a_rebuild_are_those_of_a_build_from_nothing(tmp_path: Path) -> None:
    """The files of no unit (assets, the news sitemap, the search manifest...), which the
    saved state lists for the next build's spare: a rebuild that keeps most units looks up
    only what it wrote, and must find the same ones as a build that wrote everything."""
    from desk.build.writer import MARKER

    content = tmp_path / "content"
    make_corpus(content, 12)

    def config(name: str):  # noqa: ANN202
        return load_config(REPO / "pyproject.toml", {
            "cache_dir": tmp_path / "cache", "search": True, "content_dir": content,
            "output_dir": tmp_path / name, "search_bundle_pages": 4,
            "search_fresh_pages": 2})

    kept = BuildCache()
    assert build(config("public"), Clock(NOW), cache=kept).ok
    write_story(content, make_story(5, published_at=datetime(2026, 11, 10, 3, tzinfo=UTC),
                                    headline="Edited for the rebuild"), "story-number-5.json")
    rebuilt = build(config("public"), Clock(NOW), cache=kept)
    assert rebuilt.ok and rebuilt.reused > 12
    scratch = BuildCache(history=kept.state.history)
    assert build(config("fresh"), Clock(NOW), cache=scratch).ok

    loose = set(kept.state.loose)
    in_units = {f for unit in kept.state.units.values() for f in unit.files}
    assert loose and loose.isdisjoint(in_units)
    public = tmp_path / "public"
    written = {p.relative_to(public).as_posix() for p in public.rglob("*") if p.is_file()}
    assert loose | in_units == written - {MARKER}
    assert kept.state.loose == scratch.state.loose


def test_a_kept_folder_never_meets_a_file_already_staged_there(tmp_path: Path) -> None:
    """A unit of the usual files in its folder is kept by its folder, its names not made
    unless a staged file is in that folder: any such file refuses the keep, whether this
    build wrote it or kept it in another unit, for a staged site and a set of changes."""
    from desk.build.records import UnitRecord
    from desk.build.writer import ChangesStaging, SiteRecord, Staging, WriteError
    from desk.render import Output

    out = tmp_path / "public"
    live = Staging(out)
    live.write([Output("/a/", b"a"), Output("/b/", b"b"), Output("/", b"home")])
    live.swap_in("site-1")
    story = ("index.html", "index.md", "index.json")
    for make in (lambda: Staging(out),
                 lambda: ChangesStaging(tmp_path / "changes", SiteRecord("site-1", {}, ()))):
        writer = make()
        writer.write([Output("/a/index.md", b"written")])
        writer.keep("/feed/", UnitRecord.of("/feed/", "f", ("b/index.json", "feed.xml")))
        writer.write([Output("/c/", b"c")])
        assert not writer.keep("/a/", UnitRecord.of("/a/", "k", tuple("a/" + n for n in story)))
        assert not writer.keep("/b/", UnitRecord.of("/b/", "k", ("b/index.html", "b/index.json")))
        assert not writer.keep("/", UnitRecord.of("/", "k", ("index.html", "index.json", "feed.xml")))
        assert writer.keep("/d/", UnitRecord.of("/d/", "k", ("d/index.html", "d/index.json")))
        assert not writer.keep("/d/", UnitRecord.of("/d/", "k", ("d/index.html", "d/index.json")))
        # Units by their names: one meeting a written file, a kept name, a kept folder's
        # usual file; then one that meets none, whose names no later unit may take.
        for files in (("e/x.pf", "c/index.html"), ("e/x.pf", "feed.xml"),
                      ("e/x.pf", "d/index.json")):
            assert not writer.keep("/e/", UnitRecord.of("/e/", "k", files)), files
        assert writer.keep("/e/", UnitRecord.of("/e/", "k", ("e/x.pf", "e/f/y.pf", "d/other")))
        assert not writer.keep("/e2/", UnitRecord.of("/e2/", "k", ("e/f/y.pf",)))
        assert not writer.keep("/e/f/", UnitRecord.of("/e/f/", "k", ("e/f/y.pf", "e/f/z.pf")))
        with pytest.raises(WriteError, match="two outputs for /e/f/y.pf"):
            writer.write([Output("/e/f/y.pf", b"y")])
        with pytest.raises(WriteError, match="two outputs for /g/a.pf"):
            writer.keep("/g/", UnitRecord.of("/g/", "k", ("g/a.pf", "g/b.pf", "g/a.pf")))
        writer.discard()


def test_units_kept_together_are_kept_as_one_by_one(tmp_path: Path) -> None:
    """keep_many refuses the units keep would refuse one by one and counts the same
    files: units of usual files by their folders (a folder with a written file, a
    folder kept already), and a batch with any other unit in turn, as keep does."""
    from desk.build.records import UnitRecord
    from desk.build.writer import ChangesStaging, SiteRecord, Staging
    from desk.render import Output

    out = tmp_path / "public"
    live = Staging(out)
    live.write([Output(f"/{n}/index.html", b"x") for n in "abcdefg"])
    live.swap_in("site-1")
    story = ("index.html", "index.md", "index.json")

    def usual(folder: str) -> UnitRecord:
        return UnitRecord.of(f"/{folder}/", "k", tuple(f"{folder}/{n}" for n in story))

    batches = [{f"/{n}/": usual(n) for n in "abcde"},
               {"/f/": usual("f"), "/x/": UnitRecord.of("/x/", "k", ("g/index.md", "x.pf")),
                "/g/": usual("g")}]
    for make in (lambda: Staging(out),
                 lambda: ChangesStaging(tmp_path / "changes", SiteRecord("site-1", {}, ()))):
        outcomes = []
        for together in (False, True):
            writer = make()
            writer.write([Output("/b/index.md", b"written")])
            assert writer.keep("/d/", usual("d"))
            refused = []
            for batch in batches:
                refused.append(writer.keep_many(batch) if together else
                               {u for u, r in batch.items() if not writer.keep(u, r)})
            outcomes.append((refused, writer.files))
            writer.discard()
        assert outcomes[0] == outcomes[1]
        assert outcomes[1][0] == [{"/b/", "/d/"}, {"/g/"}]



@pytest.mark.parametrize("batched", [False, True])
def test_units_with_unchanged_inputs_are_carried_or_rendered_under_their_key(
        tmp_path: Path, batched: bool) -> None:
    """The plan carries units whose inputs are the last build's without making their
    keys; one the writer cannot keep (one of its files already written) or the last
    build lacks is rendered under the key of its inputs, made then. The same when they
    come in a batch of ids (CarriedUnits), whose units are made only for those."""
    from desk.build.keys import KeyMaker
    from desk.build.ledger import Ledger
    from desk.build.pipeline import Plan
    from desk.build.records import UnitRecord
    from desk.build.writer import Staging
    from desk.render import Output
    from desk.render.context import CarriedUnits, Unit

    out = tmp_path / "public"
    live = Staging(out)
    live.write([*(Output(f"/{n}/", f"old {n}".encode()) for n in "abcdef"),
                Output("/c.txt", b"old c")])
    live.swap_in("site-1")
    keys = KeyMaker("site")
    previous = {f"/{n}/": UnitRecord.of(f"/{n}/", keys.key((n,)), (f"{n}/index.html",))
                for n in "abcdef"}
    # c's files were two; one of them is now another unit's.
    previous["/c/"] = UnitRecord.of("/c/", keys.key(("c",)), ("c/index.html", "c.txt"))
    rendered: list[str] = []

    def unit(name: str, carried: bool, page: str | None = None) -> Unit:
        def render() -> list[Output]:
            rendered.append(name)
            return [Output(page or f"/{name}/", f"new {name}".encode())]
        inputs = (name,)
        return (Unit(f"/{name}/", None, render, carried=lambda: inputs) if carried
                else Unit(f"/{name}/", inputs, render))

    writer = Staging(out)
    ledger = Ledger(previous, writer)
    units: list[Unit | CarriedUnits] = [
        unit("z", False, "/c.txt"),  # writes a file of c's: c cannot be kept
        unit("a", True), unit("b", True), unit("c", True),
        unit("d", False),  # keyed: its key is the last build's
        unit("e", True), unit("g", True)]  # g: the last build had none
    made: list[str] = []
    if batched:
        names = "abceg"

        def unit_at(i: int) -> Unit:
            made.append(names[i])
            return unit(names[i], True)

        units = [units[0], CarriedUnits([f"/{n}/" for n in names], unit_at), units[4]]
    Plan(keys, ledger, writer).write(iter(units))
    writer.swap_in("site-2")
    assert made == (["c", "g"] if batched else [])  # the units of the others never made
    assert sorted(rendered) == ["c", "g", "z"]
    assert ledger.reused == 4  # a, b, d, e
    assert {u: r.key for u, r in ledger.units.items()} == {
        f"/{n}/": keys.key((n,)) for n in "abcdegz"}
    assert (out / "c/index.html").read_bytes() == b"new c"
    assert (out / "a/index.html").read_bytes() == b"old a"


def test_a_new_process_makes_the_keys_of_changed_stories_only(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A story whose file, links and newsroom are the last build's keeps its key without
    # it being made again; the rest are made, and the site is a build from nothing's.
    content, stories, config = corpus_site(tmp_path, 12, "public")
    for n, target in ((2, 4), (5, 6)):  # story 2 links to story 4, 5 to 6
        url = f"{config.base_url}/stories/2026-11-10/story-number-{target}/"
        related = [{"url": url, "headline": "", "slug": f"story-number-{target}"},
                   {"url": "https://example.org/stories/x/", "headline": "Elsewhere",
                    "slug": "x"}]
        write_story(content, stories[n] | {"related": related})
    assert build(config, Clock(NOW)).ok
    made: list[str] = []
    inputs = desk.build.pipeline.story_page_inputs

    def counted(item: LoadedStory, *args: Any) -> str:
        made.append(item.url_path)
        return inputs(item, *args)

    monkeypatch.setattr(desk.build.pipeline, "story_page_inputs", counted)
    write_story(content, make_story(4, published_at=datetime(2026, 11, 10, 7, 8, tzinfo=UTC),
                                    newsroom="climate", headline="Edited"),
                next(content.rglob("story-number-4.json")).name)
    write_story(content, make_story(40, published_at=datetime(2026, 11, 10, 20, tzinfo=UTC)))
    assert build(config, Clock(NOW)).ok
    # Story 2 shows story 4's new headline; story 5's link leads to a story unchanged.
    assert sorted(made) == ["/stories/2026-11-10/story-number-2/",
                            "/stories/2026-11-10/story-number-4/",
                            "/stories/2026-11-10/story-number-40/"]
    assert b"Edited" in tree(config.output_dir)["stories/2026-11-10/story-number-2/index.html"]
    assert tree(config.output_dir) == fresh(content, tmp_path, "fresh")
    # A newsroom's title changed by one story's file: its stories show it (and every
    # page's navigation does), so each key is made again.
    made.clear()
    write_story(content, make_story(10, published_at=datetime(2026, 11, 10, 8, 50, tzinfo=UTC),
                                    newsroom="climate", newsroom_title="Weather"),
                next(content.rglob("story-number-10.json")).name)
    assert build(config, Clock(NOW)).ok
    assert len(set(made)) == len(made) == 13
    assert b"Weather" in tree(config.output_dir)["stories/2026-11-10/story-number-7/index.html"]
    assert tree(config.output_dir) == fresh(content, tmp_path, "fresh2")
