"""The ledger: per unit, keep last build's files when its key is unchanged, else render.

A **unit** is what is rendered together and kept or replaced together: a story's three
files, a list page and its index.json, a feed in its three formats, a search bundle.
The ledger compares each unit's key with the key it was last rendered under and records
what this build did; the writer does the keeping.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Set
from typing import Protocol

from desk.build import keys
from desk.build.records import UnitRecord
from desk.build.state import UnitChanges


class Keeper(Protocol):
    """What the ledger needs of the writer: keeping the last build's files of a unit."""

    def keep(self, unit: str, record: UnitRecord) -> bool: ...
    def keep_many(self, records: Mapping[str, UnitRecord]) -> set[str]: ...


class Ledger:
    """Which units this build kept and which it rendered, with their keys and files."""

    def __init__(self, previous: dict[str, UnitRecord], keeper: Keeper,
                 parts: Mapping[str, str] | None = None) -> None:
        self._previous = previous
        self._keeper = keeper
        # The digests of the parts of the previous units (see keys.site_parts), when known.
        self._parts = parts
        self.units: dict[str, UnitRecord] = {}
        self.reused = 0
        self._rendered: list[str] = []  # units recorded, not kept as they were
        self._anew: list[str] = []  # units recorded under a record of their own (rendered or held)

    def known(self, unit: str, key: str) -> bool:
        """Whether the last build left this unit under this key."""
        old = self._previous.get(unit)
        return old is not None and old.key == key

    def had(self, unit: str) -> bool:
        """Whether the last build left this unit."""
        return unit in self._previous

    def reuse(self, unit: str, key: str) -> UnitRecord | None:
        """The previous record if the key matches and the writer kept its files."""
        old = self._previous.get(unit)
        if old is None or old.key != key:
            return None
        return self.carry(unit)

    def carry(self, unit: str) -> UnitRecord | None:
        """The previous record under its own key, when the caller knows the unit's inputs
        unchanged since, if the writer kept its files."""
        old = self._previous.get(unit)
        if old is None or not self._keeper.keep(unit, old):
            return None
        self.units[unit] = old
        self.reused += 1
        return old

    def carry_many(self, units: Iterable[str]) -> Set[str]:
        """`carry` for each of these units, in one pass with the writer (an hourly build
        carries 100,000 stories at 100,000 stories): the units carried."""
        previous = self._previous
        records = {unit: old for unit in units if (old := previous.get(unit)) is not None}
        refused = self._keeper.keep_many(records)
        if refused:
            records = {unit: old for unit, old in records.items() if unit not in refused}
        self.units.update(records)
        self.reused += len(records)
        return records.keys()

    def hold(self, unit: str, key: str, files: tuple[str, ...], json_digest: str) -> bool:
        """Keep a held story's last published files under a key of their own (False when
        the writer cannot: one of them is already staged)."""
        record = UnitRecord.of(unit, key, files, json_digest)
        if not self._keeper.keep(unit, record):
            return False
        self.units[unit] = record
        self._anew.append(unit)
        return True

    def record_files(self, unit: str, key: str, files: tuple[str, ...],
                     json_digest: str = "") -> None:
        """Remember the files rendered for a unit."""
        self.units[unit] = UnitRecord.of(unit, key, files, json_digest)
        self._rendered.append(unit)
        self._anew.append(unit)

    def rendered_files(self) -> set[str]:
        """Every file of the units this build rendered or held, not of those it kept (a
        whole archive's files at once only in a build that renders it all)."""
        return {f for unit in self._rendered for f in self.units[unit].files}

    def keys(self) -> UnitField:
        """Each recorded unit's key, by unit: a view, not a copy."""
        return UnitField(self.units, "key")

    def json_digests(self) -> UnitField:
        """Each recorded unit's index.json digest ("" if none), by unit: a view."""
        return UnitField(self.units, "json_digest")

    def site_id(self, changes: UnitChanges) -> tuple[str, dict[str, str]]:
        """A deterministic id of what was built (same input, same id: keys.site_id), and
        the digests of its units' parts it is made from: those of the parts in which no
        unit was recorded anew or dropped are the previous ones, when known (an hour
        touches a few parts; at 100,000 stories, making every part's took 0.15 s).
        `changes`: this ledger's, as `changes` tells them once its units are all recorded."""
        before = self._parts
        if before is None:
            parts = keys.site_parts(self.keys())
        else:
            parts = keys.parts_after(before, self.keys(), [*changes.replaced, *changes.dropped])
        return keys.parts_id(parts), parts

    def changes(self) -> UnitChanges:
        """The units whose records are not the very ones the last build left (rendered or
        held anew, in the order recorded), and the units the last build left that this one
        did not record (sorted): told from the few units recorded anew, where a pass over
        every unit took 0.05 s at 100,000 stories, and was made twice an hour."""
        previous, units = self._previous, self.units
        replaced = [unit for unit in dict.fromkeys(self._anew)
                    if units[unit] is not previous.get(unit)]
        # Every unit recorded is carried from the last build or recorded anew: when as many
        # are carried as the last build left, it left none that this one dropped.
        carried = len(units) - sum(unit not in previous for unit in replaced)
        # Looked up one by one, not as a difference of the keys, which copies all of them
        # first (155,000 at 100,000 stories: a peak of the hour's memory).
        dropped = [] if carried == len(previous) else sorted(
            unit for unit in previous if unit not in units)
        return UnitChanges(previous, replaced, dropped)


class UnitField(Mapping[str, str]):
    """One field of the units a ledger records, by unit: what the pages around the
    stories ask of each story, without a second mapping as large as the archive."""

    def __init__(self, units: Mapping[str, UnitRecord], name: str) -> None:
        self._units = units
        self._name = name

    def __getitem__(self, unit: str) -> str:
        value: str = getattr(self._units[unit], self._name)
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self._units)

    def __len__(self) -> int:
        return len(self._units)
