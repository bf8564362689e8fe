"""Rendering: the site's files made from the content.

In: the catalog and the stories' models (desk.content), the settings, the templates and
static files (theme, assets) and the image files stories name (images, pictures). Out:
Output values, a site path and its bytes each, for the writer (desk.build.writer): a
story's three files (story), the pages around the stories in the page registry (site:
lists, feeds, sitemaps, llms.txt, the site's own pages), and what kind each file is
(kinds). Nothing here writes a file.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Output:
    """One file of the site: its URL path (a folder path means its index.html) and bytes."""

    path: str
    data: bytes
