"""The folders show the pipeline: a stage imports only the stages before it.

files → content (models) → render → build (the engine) → search → the pipeline that runs
them all → what is told after a build (publish) → the commands around it (serve, deploy,
the CLI). Imports inside functions count as much as those at the top.
"""

from __future__ import annotations

import ast
from pathlib import Path

from storygen import REPO

PACKAGE = REPO / "desk"

# Stages in pipeline order; a module may import its own stage and those before it. The
# most specific prefix decides a module's stage.
STAGES: dict[str, int] = {
    # The schema's own parts, which the settings validate with.
    "desk.content.findings": 0,
    "desk.content.segments": 0,
    "desk.content.models": 0,
    "desk.content.patterns": 0,  # the JSON Schema of the models' value types
    # Settings and the URL layout, which every later stage reads.
    "desk.config": 1,
    "desk.urls": 1,
    "desk.content": 2,
    "desk.render": 3,
    "desk.build": 4,
    "desk.search": 5,
    "desk.build.pipeline": 6,  # runs every stage, search included
    "desk.publish": 7,
    "desk.serve": 8,
    "desk.deploy": 8,
    "desk.scaffold": 9,
    "desk.cli": 9,
    "desk.commands": 9,
    "desk.__main__": 10,
    "desk": 0,  # the package itself: no code
}


def stage_of(module: str) -> int:
    """The stage of a module: that of the longest prefix STAGES names."""
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        found = STAGES.get(".".join(parts[:end]))
        if found is not None:
            return found
    raise AssertionError(f"{module}: in no stage; add its package to STAGES")


def module_name(path: Path) -> str:
    relative = path.relative_to(REPO).with_suffix("")
    parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
    return ".".join(parts)


def imported(tree: ast.AST, module: str) -> set[str]:
    """The desk modules (or names inside them) a module's code imports."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("desk"))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from this module's package
                package = module.split(".")[: -node.level]
                base = ".".join([*package, base] if base else package)
            if base == "desk" or base.startswith("desk."):
                found.update(f"{base}.{a.name}" for a in node.names)
    return found


def violations(module: str, imports: set[str]) -> list[str]:
    """Each import of a later stage than the module's own."""
    own = stage_of(module)
    return sorted(f"{module} (stage {own}) imports {name} (stage {stage_of(name)})"
                  for name in imports if stage_of(name) > own)


def test_no_stage_imports_a_later_one() -> None:
    modules = sorted(PACKAGE.rglob("*.py"))
    assert len(modules) > 50
    found: list[str] = []
    for path in modules:
        module = module_name(path)
        found += violations(module, imported(ast.parse(path.read_text("utf-8")), module))
    assert found == []


def test_every_package_says_what_enters_and_what_leaves() -> None:
    packages = [p for p in PACKAGE.rglob("__init__.py") if p.parent != PACKAGE]
    assert {p.parent.name for p in packages} >= {"content", "render", "build", "search",
                                                 "publish", "serve", "deploy"}
    for init in packages:
        doc = ast.get_docstring(ast.parse(init.read_text("utf-8")))
        assert doc, f"{init.relative_to(REPO)} has no docstring"


def test_the_check_sees_a_later_stage_imported_anywhere() -> None:
    code = ("from desk.content.models import Story\n"
            "def late():\n    from desk.build import writer\n"
            "    import desk.serve.server\n")
    found = violations("desk.content.loader",
                       imported(ast.parse(code), "desk.content.loader"))
    assert found == [
        "desk.content.loader (stage 2) imports desk.build.writer (stage 4)",
        "desk.content.loader (stage 2) imports desk.serve.server (stage 8)",
    ]
    # Relative imports are read from the module's package.
    assert imported(ast.parse("from ..build import keys"), "desk.content.loader") == {
        "desk.build.keys"}
    assert violations("desk.build.pipeline", {"desk.search.index"}) == []
    assert violations("desk.build.keys", {"desk.search.index"}) != []
