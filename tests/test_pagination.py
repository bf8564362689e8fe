"""Stable list pages (desk.content.catalog.stable_pages), as properties over any list and size."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from desk.content.catalog import Slice, stable_pages


def pages(count: int, size: int) -> list[Slice[int]]:
    """The pages of items count-1 … 0 (newest first: a higher number is newer)."""
    return list(stable_pages(list(range(count - 1, -1, -1)), size, lambda n: f"/p/{n}/"))


@given(st.integers(min_value=0, max_value=400), st.integers(min_value=1, max_value=30))
def test_pages_hold_every_item_once_newest_first(count: int, size: int) -> None:
    shown = pages(count, size)
    assert [i for page in shown for i in page.items] == list(range(count - 1, -1, -1))
    latest, archive = shown[0], shown[1:]
    assert latest.number == 0 and latest.archived == len(archive)
    assert len(latest.items) == count if count < 2 * size else size <= len(latest.items) < 2 * size
    assert [p.number for p in archive] == list(range(len(archive), 0, -1))
    assert all(len(p.items) == size and p.archived == 0 for p in archive)
    # Each page links to its neighbours in the order shown, and nowhere else.
    for newer, older in zip(shown, shown[1:], strict=False):
        assert (newer.next_path, older.prev_path) == (older.path, newer.path)
    assert shown[0].prev_path is None and shown[-1].next_path is None
    # Each page says where its items stand in the list.
    items = list(range(count - 1, -1, -1))
    assert all(items[p.start: p.start + len(p.items)] == list(p.items) for p in shown)


@given(st.integers(min_value=0, max_value=400), st.integers(min_value=1, max_value=30),
       st.integers(min_value=1, max_value=60))
def test_new_items_leave_archive_pages_as_they_were(count: int, size: int, new: int) -> None:
    """An archive page keeps its items whatever is added, and its links unless it was the
    newest archive page and pages were added after it."""
    before = {p.number: p for p in pages(count, size)[1:]}
    after = {p.number: p for p in pages(count + new, size)[1:]}
    for number, page in before.items():
        assert after[number].items == page.items and after[number].path == page.path
        if number < len(before) or len(after) == len(before):
            assert after[number] == page


@given(st.integers(0, 200), st.integers(1, 25), st.sets(st.integers(0, 12)))
def test_stable_units_are_each_page_s_unit_the_settled_ones_in_a_batch(
        count: int, size: int, settled_numbers: set[int]) -> None:
    """stable_units gives each page's unit, as unit_of makes it for the page stable_pages
    makes: the settled pages' as a batch of their paths (each made only when asked), the
    others one by one."""
    from desk.render.context import CarriedUnits, Unit, each_unit
    from desk.render.pages import stable_units

    def path_of(number: int) -> str:
        return f"/list/{number}/"

    def unit_of(page: Slice[int]) -> Unit:
        return Unit(page.path, None if page.number in settled_numbers else (repr(page),),
                    lambda: [])

    items = list(range(count, 0, -1))
    made = list(stable_units(items, size, path_of, settled_numbers.__contains__, unit_of))
    batches = [unit for unit in made if isinstance(unit, CarriedUnits)]
    assert len(batches) <= 1
    expected = [unit_of(page) for page in stable_pages(items, size, path_of)]
    if batches:
        assert list(batches[0].ids) == [u.id for u in expected if u.inputs is None]
    assert sorted(u[:2] for u in each_unit(iter(made))) == sorted(u[:2] for u in expected)
