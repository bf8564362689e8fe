"""Commands of `desk` beyond the core ones, each in its own module: flags → settings →
the stage that does the work (desk.publish, desk.deploy) → what is printed. desk.cli
registers them; they share its conventions, not its code (a usage error exits 2). Each
imports what it uses when it runs, so that the command line's help loads none of it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from desk.config import Config


def config_option(f: Any) -> Any:
    """--config, as every desk command takes it."""
    return click.option("--config", "config_file", type=click.Path(
        path_type=Path, exists=True, dir_okay=False), help="desk.toml, or a pyproject.toml "
        "with [tool.desk], to read (default: the nearest one, from here upwards).")(f)


def settings(config_file: Path | None, **overrides: Any) -> Config:
    """The settings, or a usage error naming what is wrong."""
    from desk.config import ConfigError, load_config

    try:
        return load_config(config_file, overrides)
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from None
