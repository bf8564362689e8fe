"""Values in autoescaped templates go through desk.render.templates.escape_text, which
must give exactly markupsafe's escape, for any value a template may show."""

from __future__ import annotations

import os
from enum import StrEnum

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jinja2 import Environment, StrictUndefined, UndefinedError, select_autoescape
from markupsafe import Markup, escape
from storygen import REPO

from desk.config import load_config
from desk.render.templates import escape_text, make_environment

EXAMPLES = int(os.environ.get("DESK_FUZZ_EXAMPLES", "300"))
SPECIAL = st.sampled_from(list("&<>\"'") + ["&amp;", "&#39;", "<b>", "\u00a0", "é", "東"])
TEXT = st.one_of(st.text(max_size=40),
                 st.lists(st.one_of(SPECIAL, st.text(max_size=4)), max_size=10).map("".join))


class Trust(StrEnum):
    CONFIRMED = "confirmed <&>"


class Shown:
    def __html__(self) -> str:
        return "<i>kept</i>"


@settings(max_examples=EXAMPLES, deadline=None)
@given(TEXT)
def test_text_is_escaped_as_markupsafe_escapes_it(text: str) -> None:
    assert escape_text(text) == str(escape(text))


@pytest.mark.parametrize("value", [Markup("<b>&amp;</b>"), 42, 4.5, None, True, Shown(),
                                   Trust.CONFIRMED, b"<x>", ("<", "&")])
def test_other_values_are_escaped_as_markupsafe_escapes_them(value: object) -> None:
    assert escape_text(value) == str(escape(value))


def test_an_undefined_value_still_fails() -> None:
    with pytest.raises(UndefinedError):
        escape_text(StrictUndefined(name="missing"))


@pytest.fixture(scope="module")
def env() -> Environment:
    return make_environment(load_config(REPO / "pyproject.toml"), reload=False)


def test_every_template_and_its_macros_show_values_through_escape_text(env: Environment
                                                                        ) -> None:
    for name in ("story.html", "_macros.html", "base.html", "feed.xml"):
        template = env.get_template(name)
        assert template.root_render_func.__globals__["escape"] is escape_text, name
    made = env.from_string("{{ x }}")
    assert made.root_render_func.__globals__["escape"] is escape_text
    # And the compiled code looks the name up there as it renders.
    shown: list[object] = []
    made.root_render_func.__globals__["escape"] = lambda value: shown.append(value) or ""
    assert made.render(x="<a>") == "" and shown == ["<a>"]


@settings(max_examples=EXAMPLES // 3, deadline=None)
@given(TEXT, TEXT)
def test_a_page_is_what_plain_jinja_makes_of_it(env: Environment, first: str, second: str
                                                ) -> None:
    source = ("{% macro cell(v) %}<td title=\"{{ v }}\">{{ v }}</td>{% endmacro %}"
              "<p>{{ a }}{{ cell(b) }}{% set both %}{{ a }}|{{ b }}{% endset %}"
              "{{ both }}{{ a ~ b }}{{ [a, b]|join(', ') }}</p>")
    plain = Environment(autoescape=select_autoescape(["html"], default_for_string=True),
                        undefined=StrictUndefined)
    ours = env.overlay(autoescape=True)
    assert (ours.from_string(source).render(a=first, b=second)
            == plain.from_string(source).render(a=first, b=second))

