"""Settings files (desk.toml and [tool.desk]), the command line's common flags, and
`desk init`."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import NOW
from storygen import REPO

from desk.cli import main
from desk.config import ConfigError, find_project_file, load_config
from desk.scaffold import EXAMPLE_STORY, ScaffoldError, scaffold, toml_string


def run(*args: str, cwd: Path | None = None) -> tuple[int, str, str]:
    """`desk ARGS` in-process, in cwd, without the repository's settings."""
    runner = CliRunner()
    if cwd is None:
        result = runner.invoke(main, list(args), catch_exceptions=False)
    else:
        with pytest.MonkeyPatch.context() as patch:
            patch.chdir(cwd)
            result = runner.invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_desk_toml_is_read_with_folders_relative_to_it(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"
    (site / "deep" / "er").mkdir(parents=True)
    (site / "desk.toml").write_text('base_url = "https://news.example.org/"\n'
                                    'content_dir = "stories"\n[newsrooms]\nx = "X"\n')
    monkeypatch.chdir(site / "deep" / "er")
    assert find_project_file(Path.cwd()) == site / "desk.toml"
    config = load_config()
    assert config.base_url == "https://news.example.org"
    assert config.title == "news.example.org"  # never another site's name
    assert config.newsrooms == {"x": "X"}
    assert config.content_dir.resolve() == (site / "stories").resolve()
    assert config.templates_dir.resolve() == (site / "templates").resolve()
    assert config.static_dir.resolve() == (site / "static").resolve()


def test_desk_toml_wins_over_pyproject_in_the_same_folder(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.desk]\nbase_url = "https://a.example"\n')
    assert load_config(find_project_file(tmp_path)).base_url == "https://a.example"
    (tmp_path / "desk.toml").write_text('base_url = "https://b.example"\n')
    assert load_config(find_project_file(tmp_path)).base_url == "https://b.example"


def test_this_repository_keeps_its_own_base_url() -> None:
    config = load_config(REPO / "pyproject.toml")
    assert (config.base_url, config.title) == ("https://hangingcontext.com", "Hanging Context")


@pytest.mark.parametrize("name,text,expected", [
    ("desk.toml", 'title = "Ours"\n', "desk.toml: base_url: required: the absolute URL"),
    ("pyproject.toml", '[tool.desk]\ntitle = "Ours"\n',
     "pyproject.toml: tool.desk.base_url: required: the absolute URL"),
    ("desk.toml", 'base_url = "news.example.org"\n',
     "desk.toml: base_url: must be an absolute http(s) URL"),
    ("desk.toml", 'base_url = "https://x.example/a\\"b"\n',
     "desk.toml: base_url: URL contains a space, control character or quote"),
    ("desk.toml", 'base_url = "https://x.example"\ntool = 1\n',
     "desk.toml: tool: Extra inputs are not permitted"),
])
def test_base_url_is_required_and_problems_name_file_and_key(
        tmp_path: Path, name: str, text: str, expected: str) -> None:
    (tmp_path / name).write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path / name)
    assert expected in str(caught.value)
    code, _, err = run("build", "--config", str(tmp_path / name))
    assert code == 2 and expected in err


def test_without_any_settings_file_base_url_is_asked_for(tmp_path: Path) -> None:
    code, _, err = run("check", cwd=tmp_path)
    assert code == 2
    assert "no desk.toml (or pyproject.toml with [tool.desk])" in err and "desk init" in err
    (tmp_path / "content").mkdir()
    code, _, err = run("check", "--base-url", "https://news.example.org", cwd=tmp_path)
    assert code == 0, err


def test_top_level_help_is_any_newsroom_s() -> None:
    code, out, _ = run("--help")
    assert code == 0 and "desk init" in out
    assert "Hanging Context" not in out and "hangingcontext" not in out.lower()


@pytest.mark.parametrize("command", [[], ["build"], ["check"], ["serve"], ["init"]])
def test_dash_h_everywhere(command: list[str]) -> None:
    code, out, _ = run(*command, "-h")
    assert code == 0 and "Usage: " in out and "-h, --help" in out
    if command:
        assert "-q, --quiet" in out and "-v, --verbose" in out


def test_quiet_prints_only_problems_and_verbose_more(desk, content: Path,
                                                     tmp_path: Path) -> None:
    from storygen import make_story, write_story

    story = make_story(1)
    story["kicker_color"] = "red"  # a warning: an unknown key
    write_story(content, story)
    args = ["--content", str(content), "--out", str(tmp_path / "out"), "--now", NOW,
            "--no-search"]
    normal = desk("build", *args)
    assert normal.exit_code == 0 and "Built 1 story" in normal.stdout and normal.stderr
    quiet = desk("build", *args, "-q")
    assert quiet.exit_code == 0 and quiet.stdout == "" and quiet.stderr == ""
    verbose = desk("build", *args, "-v")
    assert "Settings: " in verbose.stderr
    # Every stage, reading and saving the state included (the "Built" line sums them).
    timings = verbose.stderr.split("Timings: ")[1].splitlines()[0]
    assert [part.split()[0] for part in timings.split(", ")] == [
        "state", "load", "catalog", "render", "write", "save"]
    assert desk("build", *args, "-q", "-v").exit_code == 2
    check_quiet = desk("check", "--content", str(content), "-q")
    assert check_quiet.exit_code == 0 and check_quiet.stdout == "" and check_quiet.stderr == ""
    assert "warning(s)" in desk("check", "--content", str(content)).stderr


def test_init_makes_a_site_that_builds_and_checks_clean(tmp_path: Path) -> None:
    code, out, err = run("init", "newsroom", "--base-url", "https://news.example.org/",
                         "--title", 'The "Example" News', cwd=tmp_path)
    assert code == 0, err
    assert "Started a site in newsroom" in out
    site = tmp_path / "newsroom"
    settings = tomllib.loads((site / "desk.toml").read_text(encoding="utf-8"))
    assert settings["base_url"] == "https://news.example.org"
    assert settings["title"] == 'The "Example" News'
    for name in ("README.md", "requirements.txt", ".gitignore", EXAMPLE_STORY,
                 ".github/workflows/publish.yml"):
        assert (site / name).is_file(), name
    assert 'The "Example" News' in (site / "README.md").read_text(encoding="utf-8")
    code, out, err = run("check", cwd=site)
    assert code == 0 and "1 stories checked: 0 error(s), 0 warning(s)" in err
    code, out, err = run("build", "--now", NOW, "--no-search", cwd=site)
    assert code == 0, err
    page = (site / "public" / "index.html").read_text(encoding="utf-8")
    assert '<link rel="canonical" href="https://news.example.org/">' in page
    assert "The &#34;Example&#34; News" in page or "The &quot;Example&quot; News" in page


def test_init_refuses_a_folder_with_files_and_bad_urls(tmp_path: Path) -> None:
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "notes.txt").write_text("mine")
    code, _, err = run("init", str(tmp_path / "taken"), "--base-url", "https://x.example")
    assert code == 2 and "not an empty folder" in err
    assert sorted(p.name for p in (tmp_path / "taken").iterdir()) == ["notes.txt"]
    code, _, err = run("init", str(tmp_path / "new"), "--base-url", "x.example")
    assert code == 2 and "absolute http(s) URL" in err and not (tmp_path / "new").exists()
    code, _, err = run("init", str(tmp_path / "new"))
    assert code == 2 and "--base-url" in err


@pytest.mark.parametrize("title", ["Ünïcødé ☕ 🗞", 'quote " back \\ slash', "tab\tdel\x7f",
                                   "line\nbreak"])
def test_any_title_survives_the_settings_file(tmp_path: Path, title: str) -> None:
    assert tomllib.loads(f"t = {toml_string(title)}")["t"] == title
    scaffold(tmp_path / "site", "https://x.example", title)
    assert load_config(tmp_path / "site" / "desk.toml").title == title


def test_scaffold_pins_no_desk_it_cannot_reach(tmp_path: Path) -> None:
    # This desk is an editable install of a local folder: no publish workflow can fetch it.
    scaffold(tmp_path / "site", "https://x.example")
    pins = (tmp_path / "site" / "requirements.txt").read_text(encoding="utf-8")
    assert [line for line in pins.splitlines() if line and not line.startswith("#")] == []
    with pytest.raises(ScaffoldError):
        scaffold(tmp_path / "site", "https://x.example")


def test_serve_quiet_keeps_problems_and_drops_good_rebuilds(capsys: pytest.CaptureFixture[str]
                                                            ) -> None:
    from desk.cli import NORMAL, QUIET, serve_echo

    good = "changed content/x.json: built 3 stories, 0 warning(s) in 0.10 s"
    bad = "content/x.json: /headline: [schema] field required"
    failed = "changed content/x.json: build failed with 1 error(s) in 0.10 s; still serving"
    for line in (good, bad, failed):
        serve_echo(QUIET)(line)
    assert capsys.readouterr().err.splitlines() == [bad, failed]
    serve_echo(NORMAL)(good)
    assert capsys.readouterr().err.splitlines() == [good]


@pytest.mark.parametrize("command", [["build"], ["check"], ["preview", "urls"]])
def test_a_bad_flag_value_is_blamed_on_the_flag(command: list[str], tmp_path: Path) -> None:
    settings = tmp_path / "desk.toml"
    settings.write_text('base_url = "https://news.example.org"\n')
    code, _, err = run(*command, "--config", str(settings), "--base-url", "not a url",
                       cwd=tmp_path)
    assert code == 2
    assert "--base-url: must be an absolute http(s) URL" in err, err
    assert "desk.toml: base_url" not in err
    if command == ["preview", "urls"]:
        return  # its --base-url is required
    # A bad value in the file itself is still the file's.
    settings.write_text('base_url = "not a url"\n')
    code, _, err = run(*command, "--config", str(settings), cwd=tmp_path)
    assert code == 2 and f"{settings}: base_url: must be an absolute http(s) URL" in err


def test_the_output_folder_s_name_leaves_room_for_the_staging_folders(tmp_path: Path) -> None:
    """Staging folders and cache files are named after the output folder, with up to 32
    bytes more: a name past 223 bytes is refused before anything is written."""
    settings = tmp_path / "desk.toml"
    settings.write_text('base_url = "https://news.example.org"\n')
    (tmp_path / "content").mkdir()
    longest = tmp_path / ("o" * 223)
    code, _, err = run("build", "--config", str(settings), "--out", str(longest), "--now", NOW,
                       cwd=tmp_path)
    assert code == 0, err
    assert (longest / "index.html").is_file()
    code, _, err = run("build", "--config", str(settings), "--out", str(tmp_path / ("o" * 224)),
                       "--now", NOW, cwd=tmp_path)
    assert code == 2
    assert "--out: the folder's name is 224 bytes long; at most 223" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["desk.toml", "content", ".desk-cache", longest.name, *(
            p.name for p in tmp_path.glob(f".{longest.name}.desk-*"))])
    settings.write_text('base_url = "https://news.example.org"\noutput_dir = "' + "p" * 230
                        + '"\n')
    code, _, err = run("check", "--config", str(settings), cwd=tmp_path)
    assert code == 2 and f"{settings}: output_dir: the folder's name is 230 bytes" in err


@pytest.mark.parametrize("command", ["build", "announce"])
def test_a_key_with_a_trailing_newline_is_a_settings_error(command: str,
                                                           tmp_path: Path) -> None:
    settings = tmp_path / "desk.toml"
    settings.write_text('base_url = "https://news.example.org"\nindexnow_key = "abcdefgh\\n"\n')
    args = ["--urls", str(settings)] if command == "announce" else ["--out",
                                                                     str(tmp_path / "out")]
    result = CliRunner().invoke(main, [command, "--config", str(settings), *args])
    assert result.exit_code == 2, result.output
    assert f"{settings}: indexnow_key: an IndexNow key is 8 to 128 characters" in result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit)
