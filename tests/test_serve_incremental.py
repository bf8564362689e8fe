"""desk serve's work kept between saves: each save that adds, edits, moves, withdraws,
breaks and fixes a story gives, over HTTP, what a build from nothing gives, byte for
byte, and the checks across stories kept up to date find what a full check finds."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from picturegen import pictured_story
from previews import built_site, served_site
from storygen import REPO, make_corpus, make_story, write_draft, write_story, write_withdrawal

from desk.build.cache import Session
from desk.build.inspection import inspect_content
from desk.build.pipeline import BuildReport
from desk.config import Config, load_config
from desk.serve.server import DevServer

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


def saved(dev: DevServer, what: str, changed: list[Path]) -> BuildReport | None:
    """A batch of saves as desk serve takes it: prepared again, with the changed files
    as the watcher names them."""
    return dev.prepare(what, dev.content_changed([str(p) for p in changed]))


def preview(content: Path, tmp_path: Path, now: datetime, **settings: object) -> DevServer:
    """A preview of the content, serving."""
    dev = DevServer(lambda base: _config(content, tmp_path, base, **settings),
                    ("127.0.0.1", 0), now, False, lambda line: None)
    dev._content = dev._content_folder()
    dev.start()
    return dev


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
    dev = preview(content, tmp_path, NOW)
    try:
        assert dev.prepare("start") is not None
        for what, step in SAVES:
            report = saved(dev, what, step(content))
            assert report is not None
            broken = not report.ok
            assert broken == (what == "breaks"), (what, report.errors)
            if broken:
                assert dev.state.errors
                continue
            fresh = tmp_path / f"fresh-{what.replace(' ', '-')}"
            config = _config(content, tmp_path, dev.base_url)
            assert served_site(dev) == built_site(config, NOW, fresh), what
    finally:
        dev.stop()


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
    now = NOW - timedelta(hours=1)
    dev = preview(content, tmp_path, now, page_size=2, feed_size=3)
    try:
        assert dev.prepare("start") is not None
        for what, step, later in PAGED_SAVES:
            now += timedelta(minutes=later)
            dev._now = now
            report = saved(dev, what, step(content))
            assert report is not None
            assert report.ok == (what != "breaks"), (what, report.errors)
            if not report.ok:
                continue
            assert bool(report.held) == (what == "adds one held"), what
            fresh = tmp_path / f"fresh-{what.replace(' ', '-')}"
            config = _config(content, tmp_path, dev.base_url, page_size=2, feed_size=3)
            assert served_site(dev) == built_site(config, now, fresh), what
    finally:
        dev.stop()


def test_saves_on_a_site_with_pictures_equal_a_build_from_nothing(tmp_path: Path) -> None:
    # A picture's variants are made through their units, as the build makes them.
    content = tmp_path / "content"
    make_corpus(content, 6)
    write_story(content, pictured_story(20, content))
    write_draft(content, make_story(70, newsroom="climate"))  # the same record each save
    dev = preview(content, tmp_path, NOW)
    try:
        assert dev.prepare("start") is not None
        for n in (1, 2):
            report = saved(dev, f"edits {n}", _in_place(n, headline=f"Edited {n}")(content))
            assert report is not None and report.ok
            site = served_site(dev)
            assert any(name.endswith(".webp") for name in site)
            assert site == built_site(_config(content, tmp_path, dev.base_url), NOW,
                                      tmp_path / f"fresh-{n}")
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
