"""The rules for values that become path segments: the edition check's quick path takes
exactly the values its full rule takes."""

from __future__ import annotations

import re
from datetime import datetime

import pytest

from desk.content.segments import EDITION_PATTERN, check_edition


def full_rule(value: str) -> bool:
    """The rule as documented: the pattern, and a real date and hour."""
    if not re.fullmatch(EDITION_PATTERN, value, re.ASCII):
        return False
    try:
        datetime(int(value[:4]), int(value[5:7]), int(value[8:10]), int(value[11:13]))
    except ValueError:
        return False
    return True


def taken(value: str) -> bool:
    try:
        return check_edition(value) == value
    except ValueError:
        return False


def test_every_date_and_hour_around_the_limits_is_judged_as_the_full_rule_does() -> None:
    values = [f"{year:04d}-{month:02d}-{day:02d}T{hour:02d}"
              for year in (0, 1, 1999, 2024, 2025, 9999) for month in range(14)
              for day in range(33) for hour in range(26)]
    # Every hour of the four common years and of 2024 (0000 is no year).
    assert sum(map(full_rule, values)) == 24 * (4 * 365 + 366)
    assert [v for v in values if taken(v) != full_rule(v)] == []


@pytest.mark.parametrize("value", [
    "\u0662\u0660\u0662\u0666-01-01T00",  # digits of another script: refused
    "2026-01-01T00\n", "2026-1-01T00", "2026-01-01 00", "2026-02-29T00", "2024-02-29T23",
    "2026-04-31T00", "2026-12-31T23", "../../etc", ""])
def test_odd_values_are_judged_as_the_full_rule_does(value: str) -> None:
    assert taken(value) == full_rule(value)


def test_an_edition_in_another_script_s_digits_is_refused() -> None:
    r"""\d took them, and desk check then crashed on the edition's hour (fromisoformat)."""
    assert not taken("\u0662\u0660\u0662\u0666-\u0661\u0661-\u0661\u0664T\u0661\u0662")
