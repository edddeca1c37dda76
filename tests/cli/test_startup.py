"""The lazy command registry: ``bearing --help`` / ``--version`` import no command module, and the
registry's names and one-line help agree with the command modules themselves.

Timing is measured by ``bench/bench_startup.py``, not here; these tests check what is imported.
"""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

import bearing_lib.cli
from bearing_lib.cli.main import COMMANDS, app, load_module_commands
from tests.conftest import ROOT

runner = CliRunner()
# What a command may need but --help/--version must not pull in.
HEAVY = ("polars", "numpy", "scipy", "pandas", "pyarrow", "statsmodels", "altair", "vl_convert", "papermill",
         "nbconvert", "nbformat", "jupyter_client", "ipykernel", "jinja2", "yaml", "pydantic")


def _modules_after(args: list[str], code_expected: int = 0) -> list[str]:
    """Modules loaded by a fresh interpreter that runs ``bearing ARGS`` the way the console script does."""
    code = (
        "import json, sys\n"
        "from bearing_lib.cli.main import app\n"
        "try:\n"
        f"    app({args!r})\n"
        "except SystemExit as exc:\n"
        f"    assert (exc.code or 0) == {code_expected}, exc.code\n"
        "sys.stderr.write(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(done.stderr)


@pytest.mark.parametrize("args,code", [(["--help"], 0), (["--version"], 0), ([], 2)])
def test_help_and_version_import_no_command_module(args, code):
    loaded = _modules_after(args, code)
    heavy = sorted(m for m in loaded if m.split(".")[0] in HEAVY)
    assert heavy == []
    commands = sorted(m for m in loaded if m.startswith("bearing_lib.") and m not in (
        "bearing_lib.cli", "bearing_lib.cli.main", "bearing_lib.cli._common", "bearing_lib.common",
        "bearing_lib.common.errors", "bearing_lib.common.version"))
    assert commands == []


def test_registry_names_and_help_match_the_command_modules():
    seen: dict[str, str] = {}
    for module in sorted({m for m, _ in COMMANDS.values()}):
        for name, cmd in load_module_commands(module).items():
            seen[name] = module
            first_paragraph = " ".join(cmd.help.split("\n\n")[0].split())
            assert COMMANDS[name] == (module, first_paragraph), name
    assert seen == {name: module for name, (module, _) in COMMANDS.items()}


def test_every_cli_module_with_commands_is_in_the_registry():
    folder = ROOT / "bearing_lib" / "cli"
    with_register = {
        f"bearing_lib.cli.{p.stem}" for p in folder.glob("*.py") if "\ndef register(" in p.read_text()
    }
    assert with_register == {m for m, _ in COMMANDS.values()}
    assert bearing_lib.cli.__name__ == "bearing_lib.cli"


def test_top_level_help_lists_every_command_with_its_line():
    r = runner.invoke(app, ["--help"], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    for name, (_, line) in COMMANDS.items():
        assert any(row.split()[1:2] == [name] and line in row for row in r.output.splitlines()), name
    assert "--version" in r.output and "--debug" in r.output
    # the listing keeps the registry's order (the order commands were registered before)
    positions = [r.output.index(f"│ {name} ") for name in COMMANDS]
    assert positions == sorted(positions)


def test_no_arguments_shows_the_help():
    r = runner.invoke(app, [])
    assert r.exit_code == 2  # Typer's no_args_is_help: the help, as a usage error
    assert "inspect" in r.output and "weekly" in r.output


def test_version_is_the_package_metadata():
    r = runner.invoke(app, ["--version"])
    assert r.exit_code == 0
    assert r.stdout == f"bearing {importlib.metadata.version('bearing')}\n"


@pytest.mark.parametrize("name", list(COMMANDS))
def test_each_command_help_still_works(name):
    r = runner.invoke(app, [name, "--help"], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    assert "Usage:" in r.output and name in r.output
    assert " ".join(COMMANDS[name][1].split()[:4]) in " ".join(r.output.split())


def test_unknown_command_is_a_usage_error_with_a_suggestion():
    r = runner.invoke(app, ["inspekt", "x.csv"])
    assert r.exit_code == 2
    assert "No such command 'inspekt'" in r.output and "Did you mean 'inspect'" in r.output


def test_inspect_of_a_small_csv_imports_no_numpy_scipy_or_report_stack(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("request_id,start_s,latency_ms\na,1700000000.0,120\nb,1700000001.0,80\n")
    loaded = _modules_after(["inspect", str(p)])
    assert "polars" in loaded and "bearing_lib.loaders" in loaded  # it did load and describe the file
    unwanted = ("numpy", "scipy", "pandas", "statsmodels", "altair", "vl_convert", "papermill", "nbconvert", "rich")
    assert sorted(m for m in loaded if m.split(".")[0] in unwanted) == []


@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_command_help_imports_no_data_or_notebook_stack(name):
    loaded = _modules_after([name, "--help"])
    assert f"{COMMANDS[name][0]}" in loaded  # its own module, and only what that module needs to declare options
    unwanted = ("polars", "numpy", "scipy", "pandas", "pyarrow", "statsmodels", "papermill", "nbconvert",
                "jupyter_client", "vl_convert")
    assert sorted(m for m in loaded if m.split(".")[0] in unwanted) == []
