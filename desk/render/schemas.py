"""/schema/: the JSON Schemas of the content's files (a story, a withdrawal, a page's
front matter), for editors' tools and the pipelines that write stories."""

from __future__ import annotations

from desk import urls
from desk.content.models import SCHEMA
from desk.content.schema import schemas
from desk.render import Output
from desk.render.context import RenderContext, Unit, Units
from desk.render.json import encode


def schema_units(ctx: RenderContext) -> Units:
    """The three schemas: one unit, made from desk's code and the settings (the site key)
    and nothing else."""
    yield Unit(urls.STORY_SCHEMA, (SCHEMA,), lambda: schema_files(ctx))


def schema_files(ctx: RenderContext) -> list[Output]:
    return [Output(path, encode(schema)) for path, schema in schemas(ctx.config).items()]
