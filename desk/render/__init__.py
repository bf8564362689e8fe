"""Renderers: each turns models and views into Output values (a site path and bytes)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Output:
    """One file of the site: its URL path (a folder path means its index.html) and bytes."""

    path: str
    data: bytes
