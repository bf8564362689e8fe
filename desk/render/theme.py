"""Where templates and static files come from: desk's own, shipped inside the package, and a
site's own folders, which override them one file at a time.

In an installed wheel desk's own files live in the package (desk/templates, desk/static);
in a source checkout (an editable install) they are the repository's top-level folders.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from importlib import resources
from pathlib import Path, PurePosixPath

from jinja2 import BaseLoader, Environment, FileSystemLoader, TemplateNotFound
from jinja2.loaders import split_template_path

# The repository root of a source checkout (this file is desk/render/theme.py in it).
_CHECKOUT = Path(__file__).resolve().parents[2]


def shipped(name: str) -> Path:
    """desk's own folder `name` ("templates" or "static")."""
    inside = resources.files("desk").joinpath(name)
    if isinstance(inside, Path) and inside.is_dir():
        return inside
    return _CHECKOUT / name


def template_folders(site_templates: Path) -> tuple[Path, Path]:
    """Where templates are looked up, in order: the site's folder, then desk's own."""
    return site_templates, shipped("templates")


class OverridingLoader(BaseLoader):
    """The site's templates first, desk's own for every name the site does not have (as
    Jinja's ChoiceLoader over one FileSystemLoader per folder).

    A loaded template is out of date when its file changes, and also when another folder
    starts or stops providing its name (an override added or removed while serving).
    """

    def __init__(self, folders: tuple[Path, ...]) -> None:
        self.loaders = [FileSystemLoader(str(folder)) for folder in folders]
        self._folders = folders

    def list_templates(self) -> list[str]:
        """Every template name any folder provides."""
        return sorted({name for loader in self.loaders for name in loader.list_templates()})

    def get_source(self, environment: Environment, template: str
                   ) -> tuple[str, str | None, Callable[[], bool] | None]:
        """The source of the first folder's file of this name."""
        for loader in self.loaders:
            try:
                source, filename, uptodate = loader.get_source(environment, template)
            except TemplateNotFound:
                continue
            return source, filename, self._still_winning(template, filename, uptodate)
        raise TemplateNotFound(template)

    def _still_winning(self, template: str, filename: str | None,
                       uptodate: Callable[[], bool] | None) -> Callable[[], bool]:
        parts = split_template_path(template)

        def fresh() -> bool:
            winner = next((folder.joinpath(*parts) for folder in self._folders
                           if folder.joinpath(*parts).is_file()), None)
            return (winner is not None and os.path.normpath(winner) == filename
                    and (uptodate is None or uptodate()))
        return fresh


def template_loader(site_templates: Path) -> OverridingLoader:
    """The Jinja loader of a site whose own templates are in `site_templates`."""
    return OverridingLoader(template_folders(site_templates))


def static_files(site_static: Path) -> dict[str, Path]:
    """Every non-hidden static file by its relative name: desk's own, then the site's,
    whose file wins for a name both have."""
    found: dict[str, Path] = {}
    for folder in (shipped("static"), site_static):
        found.update(_files(folder))
    return {name: found[name] for name in sorted(found, key=lambda n: PurePosixPath(n).parts)}


def _files(folder: Path) -> Iterator[tuple[str, Path]]:
    if not folder.is_dir():
        return
    for source in folder.rglob("*"):
        relative = source.relative_to(folder)
        if any(part.startswith(".") for part in relative.parts) or not source.is_file():
            continue
        yield relative.as_posix(), source
