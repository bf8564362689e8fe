"""Start-up is part of every command: the command line and its help load click and the
standard library only. Each command imports the models, templates and build engine when
it runs (about 0.65 s of imports), so `desk --help` answers at once. How long it takes
is `make bench`'s business; here, what it loads."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from storygen import REPO

# What `desk ARGS` loads, in a fresh interpreter, beyond what the interpreter had loaded
# before (its site hooks): every module's name, as JSON on stderr.
PROBE = """
import json, sys
before = set(sys.modules)
from desk.cli import main
try:
    main(sys.argv[1:], prog_name="desk")
except SystemExit as stop:
    code = stop.code
json.dump({"code": code, "loaded": sorted(set(sys.modules) - before)}, sys.stderr)
"""

# desk's modules the command line itself needs: the group, the commands' definitions,
# and the heap settings every command starts with (the standard library's gc and ctypes).
COMMAND_LINE = {"desk", "desk.cli", "desk.commands", "desk.commands.announce",
                "desk.commands.preview", "desk.build", "desk.build.heap"}


def loaded_by(*args: str) -> tuple[str, set[str]]:
    """What `desk ARGS` printed on stdout, and the modules it loaded; it exited with 0."""
    result = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True,
                            text=True, cwd=REPO, timeout=60)
    assert result.returncode == 0, result.stderr
    # The probe's line comes last: whatever the command printed on stderr is before it.
    probe = json.loads(result.stderr[result.stderr.rindex('{"code": '):])
    assert probe["code"] == 0, result.stderr
    return result.stdout, set(probe["loaded"])


@pytest.mark.parametrize("args", [("--help",), ("build", "--help"), ("check", "--help"),
                                  ("serve", "--help"), ("deploy", "--help"),
                                  ("announce", "--help"), ("preview", "urls", "--help")])
def test_help_loads_click_and_the_standard_library_only(args: tuple[str, ...]) -> None:
    shown, loaded = loaded_by(*args)
    assert shown.startswith("Usage: desk")
    packages = {name.split(".")[0] for name in loaded}
    for heavy in ("pydantic", "jinja2", "markdown_it", "markupsafe", "orjson", "watchfiles",
                  "boto3", "PIL"):
        assert heavy not in packages, f"desk {' '.join(args)} imports {heavy}"
    assert packages - set(sys.stdlib_module_names) <= {"click", "desk"}
    assert {name for name in loaded if name.split(".")[0] == "desk"} <= COMMAND_LINE


def test_the_probe_sees_what_a_command_that_runs_imports(tmp_path: Path) -> None:
    # The same probe on a command that does its work: it loads what that work needs.
    (tmp_path / "stories").mkdir()
    shown, loaded = loaded_by("check", "--config", str(REPO / "pyproject.toml"),
                              "--content", str(tmp_path), "--format", "json")
    assert json.loads(shown) == []
    assert "pydantic" in {name.split(".")[0] for name in loaded}
    assert "desk.build.inspection" in loaded


def test_jobs_flag_allows_as_many_jobs_as_the_build_does() -> None:
    from desk.build.parallel import MAX_JOBS
    from desk.cli import MAX_JOBS as FLAG_MAX

    assert FLAG_MAX == MAX_JOBS
