"""The site's size budget: bytes by kind and per story, against GitHub Pages' limit, with
the date the limit falls at the current publishing rate."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

from desk.build.writer import MARKER
from desk.render.kinds import kind_of

# GitHub Pages refuses a published site larger than 1 GB (taken as 10^9 bytes, the
# stricter reading).
PAGES_LIMIT = 1_000_000_000
WARN_SHARE = 0.8
RATE_WINDOW = timedelta(days=30)


@dataclass(frozen=True)
class SiteSize:
    """What a built site weighs."""

    total: int
    files: int
    stories: int
    parts: dict[str, int]  # "story html", "story json", "story md", "list", "feed", …

    @property
    def per_story(self) -> int:
        """Bytes of the whole site per published story."""
        return self.total // self.stories if self.stories else 0


def measure(site: Path, stories: int) -> SiteSize:
    """Walk the built site once (stat only) and add its bytes up by part."""
    parts: dict[str, int] = {}
    total = files = 0
    folders = [(str(site), "")]
    while folders:
        folder, prefix = folders.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                path = prefix + entry.name
                if entry.is_dir(follow_symlinks=False):
                    folders.append((entry.path, path + "/"))
                elif path != MARKER:
                    size = entry.stat().st_size
                    part = _part(path)
                    parts[part] = parts.get(part, 0) + size
                    total += size
                    files += 1
    return SiteSize(total, files, stories, dict(sorted(parts.items())))


# Below this many stories a build skips measuring its site unless asked to (--report):
# the walk costs about 0.1 s per 1,000 stories, and the warning line (80% of 1 GB) lies
# past 5,000 stories unless they average over 160 KB each (today: 69 KB).
MEASURE_FROM_STORIES = 5_000


def worth_measuring(stories: int) -> bool:
    """Whether a build of this many stories may be near the warning line."""
    return stories >= MEASURE_FROM_STORIES


def _part(path: str) -> str:
    kind = kind_of(path)
    if path.startswith("pagefind/") or kind == "search":
        return "search"
    if kind == "story":
        return "story " + path.rpartition(".")[2]
    return "static" if kind == "asset" else kind


def stories_per_day(published: Iterable[datetime], now: datetime,
                    window: timedelta = RATE_WINDOW) -> float:
    """The publishing rate over the window before now."""
    since = now - window
    recent = sum(1 for when in published if since < when <= now)
    return recent / (window / timedelta(days=1))


def limit_date(size: SiteSize, rate: float, now: datetime,
               limit: int = PAGES_LIMIT) -> date | None:
    """When the site reaches limit at rate stories a day of today's bytes per story
    (None when nothing is published)."""
    if size.total >= limit:
        return now.date()
    if rate <= 0 or size.per_story <= 0:
        return None
    days = (limit - size.total) / (rate * size.per_story)
    return (now + timedelta(days=days)).date()


def budget_warning(size: SiteSize, rate: float, now: datetime, limit: int = PAGES_LIMIT,
                   share: float = WARN_SHARE) -> str | None:
    """A warning once the site passes share of limit; None below it."""
    if size.total < share * limit:
        return None
    when = limit_date(size, rate, now, limit)
    if size.total >= limit:
        outlook = "it is over the limit now: GitHub Pages will refuse it"
    elif when is None:
        outlook = "no story was published in the last 30 days, so no date is projected"
    else:
        outlook = (f"at {rate:.1f} stories a day and {size.per_story / 1000:.1f} KB per story "
                   f"it reaches the limit around {when.isoformat()}")
    return (f"warning: the site is {size.total / 1e6:,.0f} MB, {size.total / limit:.0%} of "
            f"GitHub Pages' {limit / 1e9:g} GB limit; {outlook}. See README, "
            "'Moving off GitHub Pages'.")


def budget_data(size: SiteSize, rate: float, now: datetime,
                limit: int = PAGES_LIMIT) -> dict[str, Any]:
    """The size section of the publish report."""
    when = limit_date(size, rate, now, limit)
    return {
        "bytes": size.total,
        "files": size.files,
        "stories": size.stories,
        "bytes_per_story": size.per_story,
        "parts": size.parts,
        "pages_limit": limit,
        "share_of_limit": round(size.total / limit, 4),
        "stories_per_day": round(rate, 2),
        "limit_reached_on": when.isoformat() if when else None,
        "warning": budget_warning(size, rate, now, limit),
    }
