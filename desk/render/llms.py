"""Files for software agents: /llms.txt (the llms.txt proposal) and /llms-full.txt."""

from __future__ import annotations

from collections.abc import Iterator

from desk import urls
from desk.catalog import Catalog
from desk.config import Config
from desk.render import Output
from desk.render.plaintext import md_text, md_url

# Links per newsroom in llms.txt: recent stories only, so the file stays small.
LLMS_STORIES_PER_NEWSROOM = 20


def render_llms(
    catalog: Catalog, config: Config, latest_markdown: dict[str, bytes]
) -> Iterator[Output]:
    """llms.txt and llms-full.txt (the latest edition's stories in Markdown)."""
    yield Output(urls.LLMS, llms_txt(catalog, config).encode("utf-8"))
    parts: list[bytes] = []
    latest = catalog.latest_edition
    for item in latest.stories if latest else ():
        markdown = latest_markdown.get(item.url_path)
        if markdown is not None:
            parts.append(markdown.rstrip(b"\n") + b"\n")
    title = md_text(config.title)
    head = (f"# {title}: edition {latest.key}\n\n" if latest
            else f"# {title}\n\nNo stories are published yet.\n")
    yield Output(urls.LLMS_FULL, head.encode("utf-8") + b"\n".join(parts))


def llms_txt(catalog: Catalog, config: Config) -> str:
    """The llms.txt index: H1, summary, then a section per newsroom of index.md links.

    Headlines and deks are plain text, escaped so that Markdown readers show them as
    they are."""
    lines = [f"# {md_text(config.title)}", "", f"> {md_text(config.description)}", ""]
    lines += [
        "Every story is published as HTML, Markdown (index.md) and JSON (index.json) at "
        f"{urls.absolute(config, '/stories/')}YYYY-MM-DD/SLUG/. Each claim cites the manifest "
        f"it comes from. Reuse terms: {urls.absolute(config, urls.REUSE_JSON)}",
        "",
    ]
    for group in catalog.newsrooms:
        lines += [f"## {md_text(group.title)}", ""]
        for item in group.stories[:LLMS_STORIES_PER_NEWSROOM]:
            story = item.summary
            link = md_url(urls.absolute(config, item.url_path + "index.md"))
            note = f": {md_text(story.dek)}" if story.dek.strip() else ""
            lines.append(f"- [{md_text(story.headline)}]({link}){note}")
        lines.append("")
    lines += ["## Optional", ""]
    lines.append(f"- [Latest edition in full]({urls.absolute(config, urls.LLMS_FULL)})")
    lines.append(f"- [All editions]({urls.absolute(config, urls.EDITIONS)}index.json)")
    lines.append(f"- [Site feed]({urls.absolute(config, urls.feed_path(urls.FEED_JSON))})")
    return "\n".join(lines) + "\n"
