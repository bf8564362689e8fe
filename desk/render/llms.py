"""Files for software agents: /llms.txt (the llms.txt proposal) and /llms-full.txt."""

from __future__ import annotations

from desk import urls
from desk.config import Config
from desk.content.catalog import Catalog
from desk.render import Output
from desk.render.context import RenderContext, Unit, Units
from desk.render.plaintext import md_text, md_url
from desk.render.story import story_markdown

# Links per newsroom in llms.txt: recent stories only, so the file stays small.
LLMS_STORIES_PER_NEWSROOM = 20


def llms_units(ctx: RenderContext) -> Units:
    """llms.txt (on every build) and llms-full.txt (keyed by the latest edition's stories)."""
    yield Unit(urls.LLMS, None,
               lambda: [Output(urls.LLMS, llms_txt(ctx.catalog, ctx.config).encode("utf-8"))])
    latest = ctx.catalog.latest_edition
    stories = latest.stories if latest else ()
    inputs = (urls.LLMS_FULL, latest.key if latest else "",
              *(ctx.story_key(s.url_path, s.digest) for s in stories))
    yield Unit(urls.LLMS_FULL, inputs, lambda: [llms_full(ctx)])


def llms_full(ctx: RenderContext) -> Output:
    """llms-full.txt: the latest edition's stories in Markdown."""
    latest = ctx.catalog.latest_edition
    parts = [story_markdown(item, ctx).rstrip(b"\n") + b"\n"
             for item in (latest.stories if latest else ())]
    config = ctx.config
    title = md_text(config.title)
    head = (f"# {title}: edition {latest.key}\n\n" if latest
            else f"# {title}\n\nNo stories are published yet.\n")
    return Output(urls.LLMS_FULL, head.encode("utf-8") + b"\n".join(parts))


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
        "A story's index.json follows the format of its source file, hangingcontext.desk/1, "
        f"whose JSON Schema is {urls.absolute(config, urls.STORY_SCHEMA)}",
        "",
    ]
    if catalog.pages:  # the newsroom's own pages: who publishes, and how
        lines += ["## About this site", ""]
        for page in catalog.pages:
            link = md_url(urls.absolute(config, page.path + "index.md"))
            note = f": {md_text(page.description)}" if page.description.strip() else ""
            lines.append(f"- [{md_text(page.title)}]({link}){note}")
        lines.append("")
    for group in catalog.newsrooms:
        lines += [f"## {md_text(group.title)}", ""]
        for item in group.stories[:LLMS_STORIES_PER_NEWSROOM]:
            texts = item.summary.texts  # read once, not once a field
            link = md_url(urls.absolute(config, item.url_path + "index.md"))
            note = f": {md_text(texts.dek)}" if texts.dek.strip() else ""
            lines.append(f"- [{md_text(texts.headline)}]({link}){note}")
        lines.append("")
    lines += ["## Optional", ""]
    lines.append(f"- [Latest edition in full]({urls.absolute(config, urls.LLMS_FULL)})")
    lines.append(f"- [All editions]({urls.absolute(config, urls.EDITIONS)}index.json)")
    lines.append(f"- [Site feed]({urls.absolute(config, urls.feed_path(urls.FEED_JSON))})")
    return "\n".join(lines) + "\n"
