"""Templates' compiled code kept in the cache folder: used only for the source and the
desk it was compiled by, never half-written, and a build from it is byte for byte a
build from nothing."""

from __future__ import annotations

import marshal
from pathlib import Path

from conftest import tree
from storygen import REPO, make_corpus
from test_code_changes import build_args, run_desk

from desk.config import load_config
from desk.render.compiled import COMPILED_TEMPLATES, SUFFIX, CompiledTemplates
from desk.render.templates import make_environment


def _render(templates: Path, folder: Path, version: str) -> str:
    """page.html rendered by a new environment (as a new process would make)."""
    config = load_config(REPO / "pyproject.toml", {"templates_dir": templates})
    env = make_environment(config, reload=False,
                           compiled=CompiledTemplates(folder, version))
    return env.get_template("page.html").render()


def test_kept_code_is_used_for_its_own_source_and_version_only(tmp_path: Path) -> None:
    templates, folder = tmp_path / "templates", tmp_path / "compiled"
    templates.mkdir()
    (templates / "page.html").write_text("<p>first</p>\n")
    assert _render(templates, folder, "v1") == "<p>first</p>\n"
    [kept] = folder.glob("*" + SUFFIX)
    head, _, _ = kept.read_bytes().partition(b"\n")
    assert head.startswith(b"desk-template v1 ")
    assert [p.name for p in folder.iterdir()] == [kept.name]  # no scratch file left

    # The next environment runs the kept code, not the source: shown by code compiled
    # from another source under the same head.
    env = make_environment(load_config(REPO / "pyproject.toml"), reload=False)
    other = env.compile("<p>from the kept code</p>\n", "page.html")
    kept.write_bytes(head + b"\n" + marshal.dumps(other))
    assert _render(templates, folder, "v1") == "<p>from the kept code</p>\n"
    # Another desk (or Python, or Jinja) compiles again, and keeps its own code.
    assert _render(templates, folder, "v2") == "<p>first</p>\n"
    assert kept.read_bytes().startswith(b"desk-template v2 ")

    # An edited template is compiled again, whatever is kept.
    kept.write_bytes(b"desk-template v2 " + head.split()[-1] + b"\n" + marshal.dumps(other))
    (templates / "page.html").write_text("<p>second</p>\n")
    assert _render(templates, folder, "v2") == "<p>second</p>\n"

    # A file cut short (a full disk, a killed copy) is compiled again and written whole.
    whole = kept.read_bytes()
    kept.write_bytes(whole[: len(whole) - 20])
    assert _render(templates, folder, "v2") == "<p>second</p>\n"
    assert kept.read_bytes() == whole
    # A folder that cannot be written only costs the compiling.
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    assert _render(templates, blocked / "compiled", "v2") == "<p>second</p>\n"


def test_a_build_from_kept_code_is_a_build_from_nothing(tmp_path: Path) -> None:
    content = tmp_path / "content"
    make_corpus(content, 6)
    cached = build_args(content, tmp_path)
    fresh = [*build_args(content, tmp_path / "fresh"), "--no-cache"]
    assert run_desk(cached, tmp_path).returncode == 0
    folder = tmp_path / "cache" / COMPILED_TEMPLATES
    kept = {p: p.stat().st_mtime_ns for p in folder.iterdir()}
    assert len(kept) >= 10 and all(p.name.endswith(SUFFIX) for p in kept)
    # Built again in a new process, every page rendered from the kept code: read, not
    # written again.
    assert run_desk([*cached, "--render-all"], tmp_path).returncode == 0
    assert {p: p.stat().st_mtime_ns for p in folder.iterdir()} == kept
    assert run_desk(fresh, tmp_path).returncode == 0
    assert tree(tmp_path / "public") == tree(tmp_path / "fresh" / "public")
    # A build that remembers nothing keeps no code either.
    assert not (tmp_path / "fresh" / "cache").exists()
