"""Search bundles: which stories each Pagefind bundle indexes, and when to seal or merge.

Pagefind's memory and time grow with the pages of one run, never cheap per page, so the
index is split into **bundles** that the search page merges at query time:

- a **sealed** bundle is indexed once and then kept as it is, build after build. It
  holds **entries**: a story at one URL in one version (named by
  `desk.content.digests.search_entry`: its URL and the digest of its file). An entry whose story
  was edited, moved or withdrawn since is **stale**: its bundle still holds it, and the
  search page drops it by the token the page carries (the manifest lists the stale
  tokens).
- the **fresh** bundle holds every published story that no sealed bundle holds as it is
  now (new and edited stories, and on a small site all of them); indexed again whenever
  it changes, so it is kept small.

Each build plans at most one **sealing** run beside the fresh bundle: the fresh stories
become a sealed bundle once there are more than `fresh_pages` of them; otherwise the most
stale bundle is indexed again without its stale entries, or the smallest bundles are
merged when there are more than the archive needs. No run ever indexes more than
`bundle_pages` pages, so memory is bounded whatever the size of the archive; only a
build without the last build's bundles (from nothing) seals the whole archive, chunk by
chunk, oldest first.

Which stories share a sealed bundle depends on the history of builds, not only on the
content: a rebuilt site has the same search results but not the same bundle layout.
Everything here is pure; desk.search.index runs Pagefind and writes the files.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from desk.content.digests import digest

FRESH = "fresh"
# A bundle whose stale share reaches this is indexed again without its stale entries
# (they cost bytes in the manifest and a wasted fragment when they match a query).
STALE_SHARE = 0.1
# Merges keep bundles about this full on average: fewer bundles, fewer requests a query.
FILL = 0.75


@dataclass(frozen=True)
class Limits:
    """Pages per Pagefind run: at most `bundle_pages` in a sealed bundle, and fresh
    stories sealed once there are more than `fresh_pages`."""

    bundle_pages: int
    fresh_pages: int


class Member(NamedTuple):
    """A published story as the search index sees it: its URL and its entry token (a
    named tuple, made at once: a build makes one for every published story)."""

    url: str
    token: str


@dataclass(frozen=True)
class Layout:
    """What a build does with the search index.

    `kept`: sealed bundles kept as they are (name → their entry tokens, stale included);
    `seal`: groups of stories to index into new sealed bundles (each replacing the
    bundles named in `merged`, which are kept in the meantime should indexing fail);
    `fresh`: the stories of the fresh bundle; `dropped`: sealed bundles left out, every
    entry of them stale or merged; `stale`: the stale entries of each kept bundle that
    has any.
    """

    kept: dict[str, tuple[str, ...]]
    seal: tuple[tuple[Member, ...], ...] = ()
    merged: tuple[str, ...] = ()
    fresh: tuple[Member, ...] = ()
    dropped: tuple[str, ...] = ()
    stale: dict[str, tuple[str, ...]] = field(default_factory=dict)


def plan(members: Mapping[str, str], sealed: dict[str, tuple[str, ...]], limits: Limits
         ) -> Layout:
    """The layout of this build from the published stories (`members`: each one's entry
    token with its URL, oldest first) and the sealed bundles the last build left (name →
    entry tokens). A Member is made only for the stories a run indexes: at 100,000
    stories, one for each, with the sets made of them, was 9 MB of an hour's peak."""
    live: dict[str, list[str]] = {}
    claimed: set[str] = set()
    for name in sorted(sealed):
        tokens = [t for t in sealed[name] if t in members and t not in claimed]
        claimed.update(tokens)
        live[name] = tokens
    dropped = tuple(n for n in sorted(sealed) if not live[n])
    kept = {n: sealed[n] for n in sorted(sealed) if live[n]}
    stale = {n: gone for n, tokens in kept.items()
             if (gone := tuple(t for t in tokens if t not in members))}
    fresh = tuple(Member(url, t) for t, url in members.items() if t not in claimed)
    if len(fresh) > limits.fresh_pages:
        chunks = tuple(fresh[i: i + limits.bundle_pages]
                       for i in range(0, len(fresh), limits.bundle_pages))
        return Layout(kept, seal=chunks, dropped=dropped, stale=stale)
    group = compaction({n: len(live[n]) for n in kept},
                       {n: len(kept[n]) - len(live[n]) for n in kept}, limits.bundle_pages)
    if not group:
        return Layout(kept, fresh=fresh, dropped=dropped, stale=stale)
    merged = {t for n in group for t in live[n]}
    seal = tuple(Member(url, t) for t, url in members.items() if t in merged)
    return Layout(kept, seal=(seal,), merged=group, fresh=fresh, dropped=dropped, stale=stale)


def compaction(live: dict[str, int], stale: dict[str, int], bundle_pages: int
               ) -> tuple[str, ...]:
    """The sealed bundles to index again as one (none: nothing worth it): the most stale
    one when its stale share reaches STALE_SHARE, else the smallest ones when there are
    more bundles than the live entries need; either way with the smallest others that
    still fit in one run."""
    if not live:
        return ()
    share = {n: stale[n] / (live[n] + stale[n]) for n in live}
    worst = max(sorted(live), key=share.__getitem__)
    rewrite = share[worst] >= STALE_SHARE
    if rewrite:
        group, pages = [worst], live[worst]
    elif len(live) > math.ceil(sum(live.values()) / (FILL * bundle_pages)) + 1:
        group, pages = [], 0
    else:
        return ()
    for name in sorted(live, key=lambda n: (live[n], n)):
        if name not in group and pages + live[name] <= bundle_pages:
            group.append(name)
            pages += live[name]
    return tuple(sorted(group)) if rewrite or len(group) > 1 else ()


def sealed_bundle(entries: Iterable[str], engine: str) -> str:
    """The name and key of a sealed search bundle: its entries and the indexer's
    version, so the same stories indexed the same way get the same name."""
    return "s-" + digest(engine, *sorted(entries))[:16]
