"""desk serve's work kept between saves: each save that adds, edits, moves, withdraws,
breaks and fixes a story gives what a build from nothing gives, byte for byte, and the
checks across stories kept up to date find what a full check finds."""

from __future__ import annotations

import json
import re
import shutil
import threading
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from conftest import tree
from picturegen import pictured_story
from storygen import REPO, make_corpus, make_story, write_draft, write_story, write_withdrawal

from desk.build import keys
from desk.build.ahead import pages_ahead
from desk.build.cache import BuildCache, Session
from desk.build.inspection import inspect_content
from desk.build.keys import KeyCache, KeyMaker
from desk.build.pipeline import BuildReport, build
from desk.build.target import FreshStaging
from desk.config import Config, load_config
from desk.content.catalog import Clock
from desk.content.history import read_history_file
from desk.render.context import Recall
from desk.serve.server import DevServer, content_paths

NOW = datetime(2026, 11, 15, tzinfo=UTC)
RELATED = "https://hangingcontext.com/stories/2026-11-14/story-number-{}/"
# Where make_corpus places a story, on the published site.
PUBLISHED = "https://hangingcontext.com/stories/2026-11-10/story-number-{}/"


def _config(content: Path, tmp_path: Path, base_url: str = "https://hangingcontext.com",
            **settings: object) -> Config:
    return load_config(REPO / "pyproject.toml", {
        "content_dir": content, "base_url": base_url, "search": False,
        "output_dir": tmp_path / "public", "cache_dir": tmp_path / "cache", **settings})


def _path(content: Path, n: int) -> Path:
    return next(content.rglob(f"story-number-{n}.json"))


def saved(dev: DevServer, what: str, changed: list[Path]
          ) -> tuple[BuildReport | None, dict[str, bytes]]:
    """A batch of saves as desk serve handles it (DevServer.saved, step by step): the
    saved stories' pages placed ahead when they can be, then the build; its report and
    the bytes of each file placed ahead, by file, as they were served before the build."""
    content = Path(dev._load(dev.base_url).content_dir)
    named = content_paths([str(p) for p in changed], content.resolve(), content)
    dev._session.changed = named[0]
    dev.place_ahead(named[1])
    placed = {name: (dev.state.folder / name).read_bytes() for name in dev.state.ahead or ()}
    return dev.rebuild(what, content_only=True), placed


# Each step changes the content and returns the files it changed, as a watcher names them.
Step = Callable[[Path], list[Path]]


def _edit(n: int, **changes: object) -> Step:
    def step(content: Path) -> list[Path]:
        old = _path(content, n)
        old.unlink()
        return [old, write_story(content, make_story(n, **changes))]
    return step


def _add(n: int, **changes: object) -> Step:
    return lambda content: [write_story(content, make_story(n, **changes))]


def _remove(n: int) -> Step:
    def step(content: Path) -> list[Path]:
        old = _path(content, n)
        old.unlink()
        return [old]
    return step


def _write(n: int, text: str) -> Step:
    def step(content: Path) -> list[Path]:
        path = _path(content, n)
        path.write_text(text, encoding="utf-8")
        return [path]
    return step


def _withdraw(n: int) -> Step:
    return lambda content: [write_withdrawal(content, str(10_000 + n))]


SAVES: list[tuple[str, Step]] = [
    ("adds", _add(40)),
    ("edits", _edit(3, headline="Edited headline")),
    ("moves its date", _edit(5, published_at=datetime(2026, 11, 12, 8, 30, tzinfo=UTC))),
    ("moves its slug", _edit(6, slug="a-new-slug")),
    ("moves its newsroom", _edit(7, newsroom="climate")),
    ("withdraws", _withdraw(8)),
    ("breaks", _write(9, "{not json")),
    ("fixes", _edit(9, headline="Mended")),
    ("removes", _remove(10)),
    ("relates", _edit(11, related=[{"url": RELATED.format(40), "headline": "Forty"}])),
]


def test_each_kind_of_save_equals_a_build_from_nothing(tmp_path: Path) -> None:
    content = tmp_path / "content"
    make_corpus(content, 30)
    dev = DevServer(lambda base: _config(content, tmp_path, base), ("127.0.0.1", 0), NOW,
                    False, lambda line: None)
    dev.start()
    ahead: dict[str, int] = {}  # the saves whose story's pages were placed ahead: files
    try:
        assert dev.rebuild("start") is not None
        for what, step in SAVES:
            changed = step(content)
            report, placed = saved(dev, what, changed)
            ahead.update({what: len(placed)} if placed else {})
            assert report is not None
            broken = not report.ok
            assert broken == (what == "breaks"), (what, report.errors)
            if broken:
                continue
            history, _ = read_history_file(dev.state.folder / ".well-known/desk-urls.json")
            fresh = tmp_path / f"fresh-{what.replace(' ', '-')}"
            config = _config(content, tmp_path, dev.base_url)
            assert build(config, Clock(NOW, drafts=True), FreshStaging(fresh),
                         BuildCache(history=history)).ok
            assert tree(dev.state.folder) == tree(fresh), what
            for name, data in placed.items():  # what was shown before the build, too
                assert (fresh / name).read_bytes() == data, (what, name)
    finally:
        dev.stop()
    # Every other save here moves, removes or breaks a file (an edit's story is dated
    # otherwise than the corpus's): only the new story is shown ahead of its build, its
    # three files (see the next tests).
    assert ahead == {"adds": 3}, ahead


def test_a_new_story_is_shown_ahead_when_it_takes_nothing_new_from_the_others(
        tmp_path: Path) -> None:
    """A new story's own pages are shown moments after its save, before the lists
    catch up, unless they take from the other stories what only the build knows: its
    related stories, a newsroom that is not there yet, an id or URL another story had."""
    content = tmp_path / "content"
    make_corpus(content, 20)
    dev = DevServer(lambda base: _config(content, tmp_path, base), ("127.0.0.1", 0), NOW,
                    False, lambda line: None)
    later = NOW + timedelta(days=1)
    new_stories: list[tuple[str, Step, bool]] = [
        ("new", _add(41), True),
        ("new draft", lambda c: [write_draft(c, make_story(42))], True),
        ("relates", _add(43, related=[{"url": RELATED.format(2), "headline": "Two"}]), False),
        ("new newsroom", _add(44, newsroom="oceans"), False),
        ("renamed newsroom", _add(45, newsroom_title="Machines"), False),
        ("not out yet", _add(46, published_at=later), False),
        ("an id taken", _add(47, id="10003"), False),
        ("a URL moved away", _add(48, slug="story-number-5"), False),
    ]
    try:
        assert dev.rebuild("start") is not None
        moved = _edit(5, slug="moved-away")(content)  # its old URL now redirects
        assert saved(dev, "moves", moved)[0] is not None
        for what, step, ahead in new_stories:
            report, placed = saved(dev, what, step(content))
            assert report is not None
            assert bool(placed) == ahead, what
            history, _ = read_history_file(dev.state.folder / ".well-known/desk-urls.json")
            fresh = tmp_path / f"fresh-{what.replace(' ', '-')}"
            assert build(_config(content, tmp_path, dev.base_url), Clock(NOW, drafts=True),
                         FreshStaging(fresh), BuildCache(history=history)).ok is report.ok
            if report.ok:
                assert tree(dev.state.folder) == tree(fresh), what
            for name, data in placed.items():  # what was shown before the build, too
                assert (fresh / name).read_bytes() == data, (what, name)
    finally:
        dev.stop()


def test_a_new_story_the_build_would_not_publish_as_saved_is_not_shown_ahead(
        tmp_path: Path) -> None:
    """A new file the build does not read as a story, or whose URL or id another story
    (a held one, or another file of the same save) claims, shows no page ahead: the
    build would publish none there, or refuse."""
    content = tmp_path / "content"
    make_corpus(content, 12)
    held = make_story(50, published_at=NOW + timedelta(hours=10))  # its URL dated NOW too
    write_story(content, held)
    dev = DevServer(lambda base: _config(content, tmp_path, base), ("127.0.0.1", 0), NOW,
                    False, lambda line: None)
    try:
        assert dev.rebuild("start") is not None
        ctx = dev._session.rendered
    finally:
        dev.stop()
    good = write_story(content, make_story(51, published_at=NOW))
    assert pages_ahead([str(good)], ctx) is not None  # as a control
    good.unlink()

    def saved_as(data: dict[str, object], where: Path) -> str:
        where.parent.mkdir(parents=True, exist_ok=True)
        where.write_text(json.dumps(data), encoding="utf-8")
        return str(where)

    outside = saved_as(make_story(52), content / "archive" / "story-52.json")
    hidden = saved_as(make_story(53), content / "stories" / ".backup" / "story-53.json")
    clashing = str(write_story(content, make_story(54, published_at=NOW, slug=held["slug"])))
    twins = [str(write_story(content, make_story(55 + n, id="20000"))) for n in range(2)]
    for paths in ([outside], [hidden], [clashing], twins):
        assert pages_ahead(paths, ctx) is None, paths


def _in_place(n: int, **changes: object) -> Step:
    """An edit of story n of `make_corpus` that leaves it in its newsroom and edition
    unless `changes` say otherwise."""
    placed: dict[str, object] = {
        "newsroom": ("artificial-intelligence", "climate", "markets")[n % 3],
        "published_at": datetime(2026, 11, 10, 6, 0, tzinfo=UTC) + timedelta(minutes=17 * n)}
    return _edit(n, **{**placed, **changes})


# Saves that change what the list pages kept between saves were made from, on a site
# with archive pages of every list (page size 2): each gives what a build from nothing
# gives. (label, step, minutes the preview's clock moves on before the save)
PAGED_SAVES: list[tuple[str, Step, int]] = [
    ("edits a headline", _in_place(34, headline="A new headline"), 0),
    ("edits an archived story", _in_place(0, headline="Old news, edited"), 0),
    ("edits nothing shown", _in_place(5, dek="Another dek"), 0),
    ("changes when modified", _in_place(6, modified_at="2026-11-14T22:00:00Z"), 0),
    ("adds one in a new edition", _add(60, published_at=datetime(2026, 11, 14, 22, 5,
                                                                   tzinfo=UTC)), 0),
    ("adds one held", _add(61, published_at=datetime(2026, 11, 14, 23, 30, tzinfo=UTC)), 0),
    ("lets the held one come due", lambda content: [], 45),
    ("moves a story to another edition", _in_place(7, published_at=datetime(
        2026, 11, 10, 6, 3, tzinfo=UTC)), 0),
    ("moves a story to another newsroom", _in_place(8, newsroom="climate"), 0),
    ("renames a newsroom", _in_place(37, newsroom_title="Climate desk"), 0),
    ("moves a slug", _in_place(10, slug="moved-slug"), 0),
    ("withdraws", _withdraw(11), 0),
    ("breaks", _write(12, "{not json"), 0),
    ("fixes", _in_place(12, headline="Mended"), 0),
    ("removes", _remove(13), 0),
    ("removes an edition's only story", _remove(60), 0),
    # Links written for the published site, as a story's own URL is, while the preview
    # has a base URL of its own: they lead to the story, whose headline the page shows.
    ("relates", _in_place(14, url=PUBLISHED.format(14),
                          related=[{"url": PUBLISHED.format(15), "headline": ""}]), 0),
    ("changes the related story", _in_place(15, headline="Related, edited"), 0),
    ("adds a draft", lambda c: [write_draft(c, make_story(70, newsroom="climate"))], 0),
    # A draft is read again for every build: a record equal to the last, not the same.
    # A story linking to it shows its headline after saves of others, then its edit.
    ("relates to the draft", _in_place(17, url=PUBLISHED.format(17), related=[
        {"url": RELATED.format(70), "headline": ""}]), 0),
    ("edits a story between", _in_place(16, headline="Between"), 0),
    ("edits the draft", lambda c: [write_draft(c, make_story(70, newsroom="climate",
                                                             headline="Draft, edited"))], 0),
]


def test_each_save_of_a_paged_site_equals_a_build_from_nothing(tmp_path: Path) -> None:
    content = tmp_path / "content"
    make_corpus(content, 40)
    now = [NOW - timedelta(hours=1)]
    dev = DevServer(lambda base: _config(content, tmp_path, base, page_size=2, feed_size=3),
                    ("127.0.0.1", 0), now[0], False, lambda line: None)
    dev.start()
    ahead: dict[str, int] = {}  # the saves whose story's pages were placed ahead: files
    try:
        assert dev.rebuild("start") is not None
        for what, step, later in PAGED_SAVES:
            now[0] += timedelta(minutes=later)
            dev._now = now[0]
            changed = step(content)
            report, placed = saved(dev, what, changed)
            ahead.update({what: len(placed)} if placed else {})
            assert report is not None
            assert report.ok == (what != "breaks"), (what, report.errors)
            if not report.ok:
                continue
            assert bool(report.held) == (what == "adds one held"), what
            history, _ = read_history_file(dev.state.folder / ".well-known/desk-urls.json")
            fresh = tmp_path / f"fresh-{what.replace(' ', '-')}"
            config = _config(content, tmp_path, dev.base_url, page_size=2, feed_size=3)
            assert build(config, Clock(now[0], drafts=True), FreshStaging(fresh),
                         BuildCache(history=history)).ok
            assert tree(dev.state.folder) == tree(fresh), what
            for name, data in placed.items():  # what was shown before the build, too
                assert (fresh / name).read_bytes() == data, (what, name)
    finally:
        dev.stop()
    assert ahead == {what: 3 for what in ("edits a headline", "edits an archived story",
                                          "edits nothing shown", "changes when modified",
                                          "adds one in a new edition",
                                          "changes the related story",
                                          "edits a story between",
                                          "edits the draft")}, ahead


def test_saves_on_a_site_with_pictures_are_made_from_the_last_catalog(tmp_path: Path) -> None:
    # The catalog a build goes on with has its image files: the next save's is made in
    # place from that very one, and carries what the stories' keys and groups allow; a
    # draft left as it was is not among the stories it replaced.
    content = tmp_path / "content"
    make_corpus(content, 6)
    write_story(content, pictured_story(20, content))
    write_draft(content, make_story(70, newsroom="climate"))  # the same record each save
    dev = DevServer(lambda base: _config(content, tmp_path, base), ("127.0.0.1", 0), NOW,
                    False, lambda line: None)
    dev.start()
    try:
        assert dev.rebuild("start") is not None
        for n in (1, 2):
            report, _ = saved(dev, f"edits {n}", _in_place(n, headline=f"Edited {n}")(content))
            assert report is not None and report.ok
            made, recall = dev._session.cataloged, dev._session.recall
            assert made is not None and made.base is not None and len(made.replaced) == 1
            assert made.catalog is recall.keys_for and made.catalog.media
            # The group the save touched is made anew, apart from what the recall kept.
            newsroom = made.replaced[0].summary.newsroom
            kept = {name for name in recall._values if isinstance(name, tuple)}
            assert ("newsroom", newsroom) not in kept
            assert ("newsroom", "artificial-intelligence") in kept  # no save touched it
    finally:
        dev.stop()


def _inspect_both(content: Path, config: Config, session: Session) -> None:
    full = inspect_content(config)
    incremental = inspect_content(config, session=session)
    assert incremental.findings == full.findings
    assert incremental.draft_findings == full.draft_findings


def test_checks_across_stories_kept_up_to_date_find_what_a_full_check_finds(
        tmp_path: Path) -> None:
    content = tmp_path / "content"
    make_corpus(content, 12)
    config = _config(content, tmp_path)
    kept = Session()
    _inspect_both(content, config, kept)
    steps: list[Step] = [
        # A related link to a story not in the content, then that story arrives, then goes.
        _edit(1, related=[{"url": RELATED.format(50), "headline": "Fifty"},
                          {"url": RELATED.format(2), "headline": "Two"}]),
        _add(50),
        _remove(50),
        # Two files at one URL, then with one id; then apart again.
        lambda c: [write_story(c, make_story(3, id="20003"), name="copy-of-3.json")],
        lambda c: [write_story(c, make_story(70, id="10004"))],
        _remove(70),
        lambda c: [next(c.rglob("copy-of-3.json")).unlink() or c / "gone.json"],
        # Newsroom titles that disagree, then agree.
        _add(60, newsroom="climate", newsroom_title="Weather"),
        _edit(4, newsroom="climate", newsroom_title="Other weather"),
        _edit(60, newsroom="climate"),
        # A draft that takes a story's URL and one that takes its id.
        lambda c: [write_draft(c, make_story(5))],
        lambda c: [write_draft(c, make_story(80, id="10006"))],
        _write(7, "{broken"),
        _edit(7),
    ]
    for step in steps:
        step(content)
        _inspect_both(content, config, kept)
    # The same stories again: nothing changed, the same findings.
    _inspect_both(content, config, kept)
    # Another configuration starts the kept checks afresh.
    _inspect_both(content, _config(content, tmp_path, "https://other.example"), kept)


def test_file_lists_kept_up_to_date_equal_a_walk(tmp_path: Path) -> None:
    import shutil

    from desk.content.listing import ContentListing
    from desk.content.loader import STORIES, content_files

    content = tmp_path / "content"
    make_corpus(content, 6)
    listing = ContentListing()
    stories = content / "stories"

    def same(changed: set[str] | None) -> None:
        walked = content_files(content, STORIES, [])
        assert listing.files(content, STORIES, [], changed) == walked

    same(None)
    added = write_story(content, make_story(90, published_at=datetime(2026, 12, 1, tzinfo=UTC)))
    same({str(added)})  # a new folder too
    hidden = stories / "2026-11-10" / ".hidden.json"
    hidden.write_text("{}", encoding="utf-8")
    same({str(hidden)})
    note = stories / "2026-11-10" / "notes.txt"
    note.write_text("x", encoding="utf-8")
    same({str(note)})
    added.unlink()
    same({str(added)})
    folder = stories / "2026-11-10"
    shutil.rmtree(folder)
    same({str(folder)})  # a folder gone: walked again
    other = write_story(content, make_story(93, published_at=datetime(2026, 11, 11, tzinfo=UTC)))
    same({str(other)})
    (stories / "linked").symlink_to(stories / "2026-11-11")
    same({str(stories / "linked" / p.name) for p in (stories / "2026-11-11").iterdir()})
    (stories / "odd.json").mkdir()
    same({str(stories / "odd.json")})


def test_kept_checks_cover_every_rule_across_stories() -> None:
    # AcrossChecks runs the grouped rules, then resolves related links and reuse terms
    # itself: a new rule across stories must be given a way to be kept up to date.
    from desk.content import checks

    urls, ids, titles = (rule for rule, _ in checks._GROUPED)
    kept = (urls, ids, checks.related_resolve, titles, checks.reuse_terms_stated)
    assert kept == checks.ACROSS_RULES


def test_grouped_rules_find_nothing_in_a_group_of_one(tmp_path: Path) -> None:
    # AcrossChecks leaves out a group of one story: a grouped rule finds what differs
    # between stories of a group.
    from desk.content import checks

    content = tmp_path / "content"
    write_story(content, make_story(1, slug="alone"))
    write_story(content, make_story(2, newsroom_title=""))
    write_story(content, make_story(3, newsroom="climate", newsroom_title="Another title"))
    config = _config(content, tmp_path)
    stories = inspect_content(config).content.stories
    assert len(stories) == 3
    # Each finds what differs between two stories of a group...
    copy = replace(stories[0], path=stories[0].path + ".copy")
    retitled = replace(stories[2], summary=replace(stories[2].summary,
                                                   newsroom=stories[0].summary.newsroom))
    pairs = {checks.unique_urls: copy, checks.unique_ids: copy,
             checks.newsroom_titles_agree: retitled}
    for rule, group_of in checks._GROUPED:
        assert group_of(pairs[rule]) == group_of(stories[0])
        assert list(rule([stories[0], pairs[rule]], config)) != []
        # ...and nothing in a group of one.
        assert all(list(rule([item], config)) == [] for item in (*stories, *pairs.values()))


def test_site_ids_made_again_from_the_changed_units_equal_site_id() -> None:
    import random

    from desk.build.keys import SiteIds, site_id
    from desk.build.records import UnitRecord

    # Unit ids where one is the start of another sort differently as joined lines.
    names = ["/n/climate/", "/n/climate/2/", "/n/climate-2/", "/feed.xml", "/feed.xml.x", "/"]
    ids = SiteIds()
    units: dict[str, UnitRecord] = {}
    rng = random.Random(13)
    for _ in range(400):
        for _ in range(rng.randint(0, 4)):
            unit = rng.choice(names) + rng.choice(["", "a/", "1/"])
            if rng.random() < 0.3:
                units.pop(unit, None)
            else:
                units[unit] = UnitRecord(rng.choice("abc"), ())
        assert ids.site_id(dict(units)) == site_id({u: r.key for u, r in units.items()})


def test_a_site_id_is_the_digest_of_its_parts_of_units() -> None:
    """A site id digests, in order, each part's digest of its units' lines in order: the
    units of a month's stories, of a month's editions, and the others, as a large site's
    sitemap parts them (ids beyond ASCII: the digest counts bytes)."""
    from desk.build.keys import site_id
    from desk.content.digests import digest

    keys = {f"/stories/2026-0{n % 3 + 1}-{n % 28 + 1:02d}/s\u00e9-{n}/": f"k{n * 7919 % 1000}"
            for n in reversed(range(200))}
    keys.update({"/editions/2026-02-03T04/": "e", "/": "f", "/feed.xml": "g", "/n/a/": "h"})
    parts = {"stories-2026-01": [], "stories-2026-02": [], "stories-2026-03": [],
             "editions-2026-02": ["/editions/2026-02-03T04/"],
             "pages": ["/", "/feed.xml", "/n/a/"]}
    for unit in keys:
        if unit.startswith("/stories/"):
            parts["stories-" + unit[9:16]].append(unit)
    parts = {name: digest(*(f"{u}={keys[u]}" for u in sorted(units)))
              for name, units in parts.items()}
    assert site_id(keys) == digest(*(f"{g}={parts[g]}" for g in sorted(parts)))
    assert site_id({}) == digest()


def test_a_ledger_makes_again_the_digests_of_the_parts_it_touched_only() -> None:
    """An hourly build's site id, made from the last build's parts' digests and those of
    the parts in which a unit was recorded anew, kept under a new record or dropped, is
    the site id of its units made from nothing; with no digests known, it makes them all.
    A part whose digest is not the one of its units would give another id: the ledger
    takes those of untouched parts as they are."""
    import random

    from desk.build.keys import site_id, site_parts
    from desk.build.ledger import Ledger
    from desk.build.records import UnitRecord

    class Keeper:
        def keep(self, unit: str, record: UnitRecord) -> bool:
            return True

        def keep_many(self, records: Mapping[str, UnitRecord]) -> set[str]:
            return set()

    rng = random.Random(7)
    folders = [f"/stories/2026-{m:02d}-0{d}/s-{n}/" for m in (1, 2, 3) for d in (1, 2)
               for n in range(5)] + ["/", "/n/a/", "/editions/2026-01-01T01/"]
    for _ in range(200):
        previous = {f: UnitRecord(rng.choice("ab"), ()) for f in folders if rng.random() < 0.8}
        parts = site_parts({u: r.key for u, r in previous.items()})
        ledger = Ledger(previous, Keeper(), parts)
        blind = Ledger(previous, Keeper())
        for folder in folders:
            choice, key = rng.random(), rng.choice("abc")
            for one in (ledger, blind):
                if folder in previous and choice < 0.7:
                    one.carry_many([folder])
                elif choice < 0.9:
                    one.record_files(folder, key, ())
        made, made_parts = ledger.site_id(ledger.changes())
        whole = site_id({u: r.key for u, r in ledger.units.items()})
        assert made == whole == blind.site_id(blind.changes())[0]
        assert made_parts == site_parts({u: r.key for u, r in ledger.units.items()})
    stale = dict(parts, pages="0" * 32)
    ledger = Ledger(previous, Keeper(), stale)
    ledger.carry_many(list(previous))
    assert ledger.site_id(ledger.changes())[0] != site_id({u: r.key for u, r in previous.items()})


def test_saves_in_quick_succession_are_shown_ahead_and_end_as_a_build_from_nothing(
        tmp_path: Path) -> None:
    """Saves that come while the last one's build runs: each story's page is shown ahead
    of its build, no build puts back an older version of a page placed ahead (the reload
    channel never tells a page to show an older headline), and once the builds are done
    the site is what a build from nothing makes."""
    from test_serve import events

    content = tmp_path / "content"
    make_corpus(content, 300)  # builds long enough for saves to come while they run
    lines: list[str] = []
    dev = DevServer(lambda base: _config(content, tmp_path, base), ("127.0.0.1", 0), NOW,
                    False, lines.append)
    assert dev.rebuild("start") is not None
    dev.start()
    watching = threading.Event()
    watcher = threading.Thread(target=dev.watch, args=(watching.set,), daemon=True)
    watcher.start()
    try:
        assert watching.wait(60)
        channel = events(dev)
        next(channel)
        page = dev.state.folder / "stories/2026-11-10/story-number-3/index.html"
        shown = []
        for n in range(6):  # each saved once the last is shown: while its build runs
            write_story(content, {**make_story(3, **_placed(3)), "headline": f"Version {n}"})
            while not shown or shown[-1] != n:
                message = next(channel)
                shown.append(_version(page.read_bytes()))
        # The last event read may already be the last build's (a page placed ahead and
        # its build published between two reads of the channel are one event): look
        # first, then wait for the next event only while the site is not yet the same.
        fresh = tmp_path / "fresh"
        while True:
            if dev.state.ahead is None:
                shutil.rmtree(fresh, ignore_errors=True)
                assert build(_config(content, tmp_path, dev.base_url),
                             Clock(NOW, drafts=True), FreshStaging(fresh), BuildCache()).ok
                if tree(dev.state.folder) == tree(fresh):
                    break
            message = next(channel)
            shown.append(_version(page.read_bytes()))
        assert shown == sorted(shown), (shown, message)  # never an older version again
    finally:
        dev.stop()


def _placed(n: int) -> dict[str, object]:
    return {"newsroom": ("artificial-intelligence", "climate", "markets")[n % 3],
            "published_at": datetime(2026, 11, 10, 6, 0, tzinfo=UTC) + timedelta(minutes=17 * n)}


def _version(page: bytes) -> int:
    found = re.search(rb"Version (\d)", page)
    return int(found.group(1)) if found else -1


def test_a_page_placed_ahead_while_a_build_runs_is_left_as_it_is(tmp_path: Path) -> None:
    """The build that was running when a newer save's page was placed ahead rendered the
    older version: it leaves the page as it is, and its state forgets the page's unit so
    the next build renders it (LiveFolder, place_ahead, SavedState.forget_units)."""
    from desk.build.records import UnitRecord
    from desk.build.state import SavedState
    from desk.build.writer import MARKER, Known, LiveFolder, place_ahead
    from desk.render import Output

    folder = tmp_path / "site"
    folder.mkdir()
    (folder / MARKER).write_text("desk\nsite-id: before\n", encoding="utf-8")
    (folder / "a.html").write_bytes(b"the last build's")
    lock, known = threading.Lock(), Known()
    writer = LiveFolder(folder, lock, {"a.html"}, known=known)
    writer.write([Output("/a.html", b"an older save's"), Output("/b.html", b"new")])
    had, files = place_ahead(folder, lock, [Output("/a.html", b"the newest save's")], known)
    assert (had, files) == ("before", ("a.html",))
    writer.swap_in("after")
    assert (folder / "a.html").read_bytes() == b"the newest save's"
    assert (folder / "b.html").read_bytes() == b"new" and "a.html" not in known.replaced
    state = SavedState(site_id="after", units={
        "/a/": UnitRecord.of("/a/", "k", ("a.html",)), "/b/": UnitRecord.of("/b/", "k", ("b.html",))})
    state.forget_units({"/a/"})
    assert list(state.units) == ["/b/"]


def test_what_a_preview_keeps_between_saves_outgrows_no_bound_a_site_needs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A site whose builds ask for more values than the fixed bound keeps them from one
    save to the next (at 100,000 stories they were forgotten at every save), and so do
    saves that ask for few (they carry the groups they leave as they were); values no
    build asks for any more are forgotten once the kept outnumber twice the most a
    build asked for, and story keys once they outnumber twice the stories last told."""
    monkeypatch.setattr(Recall, "MAX_KEPT", 10)
    recall, made = Recall(), []

    def ask(names: range) -> None:
        recall.start("site")
        for n in names:
            recall.value(n, n, lambda n=n: made.append(n))
            recall.line(f"/{n}/", NOW, lambda path, _: path)

    ask(range(30))
    ask(range(30))
    assert len(made) == 30  # the second build made none again
    for _ in range(4):
        ask(range(2))  # saves that ask for a few
    ask(range(30))
    assert len(made) == 30  # none forgotten meanwhile
    ask(range(100, 130))  # the pages of the first builds are gone
    ask(range(200, 230))  # and those of the build before
    ask(range(200, 230))  # theirs outnumber twice the most asked for: all forgotten
    assert len(made) == 120
    assert len(recall._values) + len(recall._lines) == 60
    recall.story_keys = {f"/s/{n}/": recall.story_keys.get("") for n in range(11)}
    recall.start("site")  # told for no catalog, more than the bound: forgotten
    assert recall.story_keys == {} and recall._values == {}


def test_unit_keys_a_preview_keeps_outgrow_no_bound_a_site_needs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The same for unit keys: none made twice while a build asks for more than the fixed
    bound (they were cleared in the middle of such a build), and the stale forgotten."""
    monkeypatch.setattr(KeyMaker, "MAX_CACHED", 10)
    cache, made = KeyCache(), []
    monkeypatch.setattr(keys, "Digester", lambda site: lambda *parts: made.append(parts)
                        or str(parts))

    def build_keys(names: range) -> None:
        maker = KeyMaker("site", cache)
        for n in names:
            maker.key((str(n),), recurring=True)

    build_keys(range(30))
    build_keys(range(30))
    assert len(made) == 30
    build_keys(range(100, 105))
    build_keys(range(100, 105))
    assert len(made) == 40 and len(cache.keys) == 5
