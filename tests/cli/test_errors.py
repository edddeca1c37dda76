"""No traceback without ``--debug``: bearing errors are one line (exit 1), anything else is one
line naming the log that holds the traceback (exit 70); ``--debug`` prints the traceback.

Exceptions are injected by monkeypatching a function a command calls, or through a small
command registered here (``register`` below) for the cases no real command lets through.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

import bearing_lib.data.describe
from bearing_lib.cli import _common
from bearing_lib.cli.main import COMMANDS, app
from bearing_lib.common.errors import InputError, ParameterError
from tests.conftest import ROOT

runner = CliRunner()
ONE_LINER = re.compile(
    r"^internal error: RuntimeError: disk on fire, twice \(full traceback in (?P<log>\S+); rerun with --debug\)$"
)


@pytest.fixture
def small_csv(tmp_path: Path) -> Path:
    p = tmp_path / "t.csv"
    p.write_text("request_id,start_s,latency_ms\na,1700000000.0,120\nb,1700000001.0,80\n")
    return p


@pytest.fixture
def logs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "logs"
    monkeypatch.setenv(_common.LOG_DIR_ENV, str(folder))
    return folder


def _boom(*_args, **_kwargs):
    raise RuntimeError("disk on fire,\n  twice")


def test_unexpected_exception_is_one_line_and_a_log(small_csv, logs, monkeypatch):
    monkeypatch.setattr(bearing_lib.data.describe, "describe_dataset", _boom)
    r = runner.invoke(app, ["inspect", str(small_csv)])
    assert r.exit_code == 70 == _common.EXIT_INTERNAL
    assert "Traceback" not in r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    m = ONE_LINER.match(lines[0])
    assert m, lines[0]
    log = Path(m.group("log"))
    assert log.parent == logs and [p.name for p in logs.iterdir()] == [log.name]
    text = log.read_text()
    assert "Traceback (most recent call last)" in text
    assert 'raise RuntimeError("disk on fire,\\n  twice")' in text and "in _boom" in text
    assert text.rstrip().endswith("RuntimeError: disk on fire,\n  twice")
    assert r.stdout == ""


def test_debug_prints_the_traceback(small_csv, logs, monkeypatch):
    monkeypatch.setattr(bearing_lib.data.describe, "describe_dataset", _boom)
    r = runner.invoke(app, ["--debug", "inspect", str(small_csv)])
    assert r.exit_code == 70
    assert r.stderr.startswith("Traceback (most recent call last)")
    assert "in _boom" in r.stderr and "RuntimeError: disk on fire," in r.stderr
    assert ONE_LINER.match(r.stderr.strip().splitlines()[-1])


def test_bearing_error_is_one_line_exit_1_and_debug_adds_the_traceback(small_csv, logs, monkeypatch):
    def refuse(*_a, **_k):
        raise ParameterError("--quantile must be in (0, 1), got 7")

    monkeypatch.setattr(bearing_lib.data.describe, "describe_dataset", refuse)
    r = runner.invoke(app, ["inspect", str(small_csv)])
    assert r.exit_code == 1
    assert r.stderr == "error: --quantile must be in (0, 1), got 7\n"
    assert not logs.exists()  # a bearing error is no internal error: no log
    r = runner.invoke(app, ["--debug", "inspect", str(small_csv)])
    assert r.exit_code == 1
    assert r.stderr.startswith("Traceback (most recent call last)")
    assert r.stderr.rstrip().endswith("error: --quantile must be in (0, 1), got 7")


# A command registered only by these tests: raises what --raise names, outside any handler.
def register(sub: typer.Typer) -> None:
    @sub.command("boom")
    def boom_cmd(what: str = typer.Option("input", "--raise")) -> None:
        """Raise on purpose (tests only)."""
        if what == "input":
            raise InputError("expected a number, found 'x'", path="f.csv", row=3, field="latency_ms")
        if what == "key":
            raise KeyError("latency_ms")
        if what == "exit":
            raise typer.Exit(4)
        raise RuntimeError(what)


@pytest.fixture
def boom(monkeypatch):
    monkeypatch.setitem(COMMANDS, "boom", (__name__, "Raise on purpose (tests only)."))


def test_a_bearing_error_no_command_caught_is_still_one_line(boom, logs):
    r = runner.invoke(app, ["boom", "--raise", "input"])
    assert r.exit_code == 1
    assert r.stderr == "error: f.csv, row 3, field 'latency_ms': expected a number, found 'x'\n"


def test_any_exception_type_becomes_the_one_liner(boom, logs):
    r = runner.invoke(app, ["boom", "--raise", "key"])
    assert r.exit_code == 70
    line = r.stderr.strip()
    assert line.startswith("internal error: KeyError: 'latency_ms' (full traceback in ")
    assert "Traceback" not in r.output


def test_exits_and_usage_errors_pass_through(boom, logs):
    assert runner.invoke(app, ["boom", "--raise", "exit"]).exit_code == 4
    r = runner.invoke(app, ["boom", "--nope"])
    assert r.exit_code == 2 and "No such option" in r.output
    assert not logs.exists()


def test_log_falls_back_to_the_temp_folder(boom, tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(_common.LOG_DIR_ENV, str(blocker / "logs"))  # cannot be created
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    r = runner.invoke(app, ["boom", "--raise", "no luck"])
    assert r.exit_code == 70
    logs = list((tmp_path / "tmp" / "bearing-logs").iterdir())
    assert len(logs) == 1 and f"full traceback in {logs[0]};" in r.stderr
    assert "RuntimeError: no luck" in logs[0].read_text()


def test_default_log_folder_is_the_user_state_log_folder(tmp_path, monkeypatch):
    monkeypatch.delenv(_common.LOG_DIR_ENV, raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    if sys.platform.startswith("linux"):
        assert _common.log_dir() == tmp_path / "state" / "bearing" / "log"


def test_console_script_prints_no_traceback(small_csv, tmp_path):
    """The real process (standalone mode, real stderr), with the exception injected inside it."""
    code = (
        "import sys\n"
        "import bearing_lib.data.describe as d\n"
        "def boom(*a, **k):\n"
        "    raise RuntimeError('disk on fire,\\n  twice')\n"
        "d.describe_dataset = boom\n"
        "from bearing_lib.cli.main import app\n"
        "app()\n"
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), _common.LOG_DIR_ENV: str(tmp_path / "logs")}
    done = subprocess.run([sys.executable, "-c", code, "inspect", str(small_csv)], capture_output=True, text=True,
                          env=env, cwd=ROOT)
    assert done.returncode == 70
    assert "Traceback" not in done.stderr and ONE_LINER.match(done.stderr.strip()), done.stderr
    done = subprocess.run([sys.executable, "-c", code, "--debug", "inspect", str(small_csv)], capture_output=True,
                          text=True, env=env, cwd=ROOT)
    assert done.returncode == 70
    assert "Traceback (most recent call last)" in done.stderr and "in boom" in done.stderr


def test_an_exception_outside_any_command_is_caught_too(logs, monkeypatch):
    from bearing_lib.cli.main import LazyGroup

    def broken(self, ctx):
        raise RuntimeError("disk on fire,\n  twice")

    monkeypatch.setattr(LazyGroup, "list_commands", broken)  # used while printing the top-level help
    r = runner.invoke(app, ["--help"])
    assert r.exit_code == 70
    assert "Traceback" not in r.output and ONE_LINER.match(r.stderr.strip()), r.stderr
    r = runner.invoke(app, ["--debug", "--help"])
    assert r.exit_code == 70 and r.stderr.startswith("Traceback (most recent call last)")


def test_a_long_message_is_cut_on_the_line_and_whole_in_the_log(boom, logs):
    r = runner.invoke(app, ["boom", "--raise", "x" * 1000])
    assert r.exit_code == 70
    message = r.stderr.split("internal error: RuntimeError: ", 1)[1].split(" (full traceback in ", 1)[0]
    assert len(message) == _common.MESSAGE_MAX and message == "x" * (_common.MESSAGE_MAX - 1) + "…"
    (log,) = logs.iterdir()
    assert "RuntimeError: " + "x" * 1000 in log.read_text()
