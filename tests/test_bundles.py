"""The layout of the search index: which stories each bundle holds, build after build."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from desk.content.digests import Digester, digest, search_entry
from desk.search.bundles import Layout, Limits, Member, plan, sealed_bundle

LIMITS = Limits(bundle_pages=10, fresh_pages=4)


def members(versions: dict[int, int]) -> list[Member]:
    """Stories by number, oldest first, each in its version."""
    return [Member(f"/stories/{n}/", search_entry(f"/stories/{n}/", str(v)))
            for n, v in sorted(versions.items())]


def by_token(listed: list[Member]) -> dict[str, str]:
    """The members as the layout is planned from: entry token → URL, in order."""
    return {m.token: m.url for m in listed}


def stale(layout: Layout) -> set[str]:
    """Every stale entry of the layout's kept bundles."""
    return {t for gone in layout.stale.values() for t in gone}


def after(layout: Layout) -> dict[str, tuple[str, ...]]:
    """The sealed bundles the next build starts from (every run succeeded)."""
    sealed = {n: t for n, t in layout.kept.items() if n not in layout.merged}
    for group in layout.seal:
        tokens = tuple(m.token for m in group)
        sealed[sealed_bundle(tokens, "test")] = tokens
    return sealed


def test_a_small_site_is_all_fresh_and_a_large_one_sealed_oldest_first() -> None:
    small = plan(by_token(members(dict.fromkeys(range(4), 0))), {}, LIMITS)
    assert small.seal == () and len(small.fresh) == 4
    large = members(dict.fromkeys(range(25), 0))
    layout = plan(by_token(large), {}, LIMITS)
    assert [len(group) for group in layout.seal] == [10, 10, 5] and layout.fresh == ()
    assert [m for group in layout.seal for m in group] == large
    assert plan(by_token(large), after(layout), LIMITS) == Layout(after(layout))  # nothing to do


def test_edits_and_withdrawals_go_stale_and_the_edited_stories_fresh() -> None:
    versions = dict.fromkeys(range(30), 0)
    sealed = after(plan(by_token(members(versions)), {}, LIMITS))
    versions[3] = 1  # edited
    del versions[25]  # withdrawn
    versions[30] = 0  # new
    layout = plan(by_token(members(versions)), sealed, LIMITS)
    assert [m.url for m in layout.fresh] == ["/stories/3/", "/stories/30/"]
    old = {search_entry("/stories/3/", "0"), search_entry("/stories/25/", "0")}
    assert stale(layout) == old
    # A tenth of two bundles is stale: one of them is indexed again without its stale
    # entry (and with no other bundle, as none fits beside it in one run).
    assert len(layout.merged) == 1 and old & set(sealed[layout.merged[0]])
    assert [len(group) for group in layout.seal] == [9]


def test_fresh_stories_are_sealed_once_there_are_too_many() -> None:
    versions = dict.fromkeys(range(20), 0)
    sealed = after(plan(by_token(members(versions)), {}, LIMITS))
    versions.update(dict.fromkeys(range(20, 25), 0))
    layout = plan(by_token(members(versions)), sealed, LIMITS)
    assert [len(group) for group in layout.seal] == [5] and layout.fresh == ()
    assert layout.merged == () and set(layout.kept) == set(sealed)


def test_a_bundle_with_nothing_current_is_dropped_without_indexing() -> None:
    versions = dict.fromkeys(range(20), 0)
    sealed = after(plan(by_token(members(versions)), {}, LIMITS))
    for n in range(10):
        del versions[n]
    layout = plan(by_token(members(versions)), sealed, LIMITS)
    assert len(layout.dropped) == 1 and layout.seal == () and len(layout.kept) == 1


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=0, max_value=2**32), st.integers(min_value=1, max_value=40))
def test_every_story_is_indexed_once_and_no_run_is_larger_than_a_bundle(
        seed: int, builds: int) -> None:
    rng = random.Random(seed)
    versions = dict.fromkeys(range(rng.randrange(0, 60)), 0)
    sealed: dict[str, tuple[str, ...]] = {}
    for _ in range(builds):
        current = members(versions)
        layout = plan(by_token(current), sealed, LIMITS)
        held = [t for n, tokens in layout.kept.items() if n not in layout.merged for t in tokens]
        found = [m.token for m in layout.fresh] + [m.token for g in layout.seal for m in g]
        found += [t for t in held if t in {m.token for m in current}]
        assert sorted(found) == sorted(m.token for m in current)
        assert all(len(group) <= LIMITS.bundle_pages for group in layout.seal)
        if layout.fresh:  # an hourly build: the fresh bundle and one other run at most
            assert len(layout.fresh) <= LIMITS.fresh_pages and len(layout.seal) <= 1
        # Stale: every entry of a kept bundle that is not current, and no other.
        assert stale(layout) == {t for k in layout.kept.values() for t in k} - {
            m.token for m in current}
        sealed = after(layout)
        for n in rng.sample(sorted(versions), min(len(versions), rng.randrange(0, 4))):
            versions[n] += 1
        for n in rng.sample(sorted(versions), min(len(versions), rng.randrange(0, 2))):
            del versions[n]
        start = max(versions, default=-1) + 1
        versions.update(dict.fromkeys(range(start, start + rng.randrange(0, 5)), 0))


def test_a_search_entry_is_the_same_whatever_desk_s_code() -> None:
    # Sealed bundles outlive upgrades: the token of a story's version never changes.
    assert search_entry("/stories/2026-11-14/a-story/", "0" * 64) == "2021eafa727b"


_PARTS = st.lists(st.one_of(st.text(max_size=40), st.binary(max_size=40)), max_size=4)


@given(first=_PARTS, rest=_PARTS)
def test_a_digester_digests_its_first_parts_and_the_rest_as_one(
        first: list[str | bytes], rest: list[str | bytes]) -> None:
    made = Digester(*first)
    assert made(*rest) == digest(*first, *rest)
    assert made(*rest) == made(*rest)  # its first parts are hashed once, not used up

