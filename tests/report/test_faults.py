"""Faults of a report run: killed runs, concurrent runs, unusable reports folder, missing
kernel, cell timeout, bad input found before or inside a notebook, inputs too large.

The notebook run here is a copy of the test stand-in tests/fixtures/report/notebooks/
weekly_report.ipynb (it builds the report from the HAND-MADE contract documents) with two
cells added: one sleeping ``sleep_s`` seconds (to time out, or to be killed in), one raising
bearing's ``BadValueError`` for row ``bad_row`` (a bad row only the loader would see).
Kills are real: ``python -m bearing_lib.cli.main weekly ...`` in a subprocess, paused at a
named stage by the runner's test hook (``BEARING_PAUSE_AT``) or after a fixed delay, then
SIGKILLed with its process group (the kernel included).
"""

from __future__ import annotations

import errno
import fcntl
import importlib
import inspect
import json
import os
import pkgutil
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import polars as pl
import pytest
from typer.testing import CliRunner

import bearing_lib.cli
import bearing_lib.report
from bearing_lib.app import pipeline, runner
from bearing_lib.app.index import ReportsIndex, collect
from bearing_lib.cli.main import app
from bearing_lib.common import errors
from bearing_lib.common.errors import BearingError, InputError, ParameterError
from tests.factories import summary_doc
from tests.report.conftest import HAND_MADE, hand_made

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "notebooks"
WEEK = "2026-W48"
cli = CliRunner()


# ------------------------------------------------------------------ fixtures and helpers


@pytest.fixture(scope="module")
def notebooks(tmp_path_factory) -> Path:
    """The stand-in notebook with a sleeping cell (source cell 5) and a bad-input cell (cell 6)."""
    nb = nbformat.read(HAND_MADE / "notebooks" / "weekly_report.ipynb", as_version=4)
    params = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    params.source += ("\nsleep_s: float = 0.0  # seconds the sleeping cell sleeps"
                      "\nbad_row: int = 0  # raise BadValueError for this row (0: do not)")
    assert nb.cells[3].source.startswith("assert not fail")
    nb.cells.insert(4, nbformat.v4.new_code_cell("import time\n\ntime.sleep(sleep_s)"))
    nb.cells.insert(5, nbformat.v4.new_code_cell(
        "from bearing_lib.common.errors import BadValueError\n\n"
        "if bad_row:\n"
        "    raise BadValueError(\"expected a number, found 'abc'\", path='prod.csv', row=bad_row,\n"
        "                        field='latency_ms')"))
    folder = tmp_path_factory.mktemp("notebooks")
    nbformat.write(nb, folder / "weekly_report.ipynb")
    return folder


@pytest.fixture(scope="module")
def red_plan(tmp_path_factory) -> Path:
    doc = hand_made("plan")
    doc["verdict"] = "red"
    p = tmp_path_factory.mktemp("plans") / "red-plan.json"
    p.write_text(json.dumps(doc))
    return p


@pytest.fixture(scope="module")
def old_reports(tmp_path_factory, notebooks, red_plan) -> Path:
    """A reports folder holding a complete red report for WEEK (the "previous" report)."""
    root = tmp_path_factory.mktemp("old") / "reports"
    runner.run_report([runner.NotebookStep(notebooks / "weekly_report.ipynb")], name=WEEK, reports_dir=root,
                      given={"limits_json": str(HAND_MADE / "limits.json"), "plan_json": str(red_plan),
                             "week": WEEK}, progress=False)
    return root


@pytest.fixture
def no_kernel(monkeypatch):
    import papermill

    monkeypatch.setattr(papermill, "execute_notebook", lambda *a, **k: pytest.fail("a notebook was executed"))


def _args(reports: Path, notebooks: Path, plan: Path, *extra: str) -> list[str]:
    return ["--reports-dir", str(reports), "--notebooks", str(notebooks),
            "-p", "limits_json", str(HAND_MADE / "limits.json"), "-p", "plan_json", str(plan), *extra]


def _start(args: list[str], tmp_path: Path, **env: str) -> subprocess.Popen:
    """``python -m bearing_lib.cli.main ARGS`` in its own process group (this worktree's code)."""
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    return subprocess.Popen([sys.executable, "-m", "bearing_lib.cli.main", *args], cwd=ROOT, env=full_env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)


def _wait_for(marker: Path, proc: subprocess.Popen, timeout_s: float = 180) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if marker.exists() and marker.read_text().strip():
            return marker.read_text().strip()
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"the run ended (exit {proc.returncode}) before its pause: {err.decode()[-2000:]}")
        time.sleep(0.05)
    _kill(proc)
    pytest.fail(f"no pause within {timeout_s} s")


def _kill(proc: subprocess.Popen) -> None:
    """SIGKILL the run and its kernel (the process group the run leads), then reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.communicate(timeout=30)


def _published(reports: Path) -> str:
    """The verdict of the complete report in reports/WEEK; fails on a partial or mixed folder.

    Complete: exactly the three files; summary.json, the headline badge of report.html and
    the plan the executed notebook was given all come from the same run (red plan → red).
    """
    d = reports / WEEK
    assert sorted(p.name for p in d.iterdir()) == ["report.html", "summary.json", "weekly_report.ipynb"]
    verdict = json.loads((d / "summary.json").read_text())["verdict"]
    html = (d / "report.html").read_text()
    assert html.rstrip().endswith("</html>") and f'class="badge big b-{verdict}"' in html
    executed = nbformat.read(d / "weekly_report.ipynb", as_version=4)
    injected = next(c.source for c in executed.cells if "injected-parameters" in c.metadata.get("tags", []))
    assert ("red-plan.json" in injected) == (verdict == "red")
    return verdict


def _index(reports: Path) -> dict[str, str]:
    """What reports/index.html lists: report name → verdict badge, and failed folder names → "failed"."""
    html = (reports / "index.html").read_text()
    rows = dict(re.findall(r'href="\./([^/"]+)/report\.html">[^<]*</a></td>\s*<td><span class="badge b-(\w+)"', html))
    failed = html.split("<h2>Failed runs", 1)[1] if "<h2>Failed runs" in html else ""
    rows.update({n: "failed" for n in re.findall(r"<li>([^:<]+):", failed)})
    return rows


def _hidden_dirs(reports: Path) -> list[str]:
    return sorted(p.name for p in reports.iterdir() if p.is_dir() and p.name.startswith("."))


# ------------------------------------------------------------------ one exception tree, exit codes


def test_every_report_and_cli_error_is_in_the_one_tree():
    """No exception class is defined in bearing_lib.report or bearing_lib.cli; the report-run ones
    are in common/errors.py under BearingError, each with its documented exit code."""
    for pkg in (bearing_lib.report, bearing_lib.cli):
        for info in pkgutil.iter_modules(pkg.__path__, pkg.__name__ + "."):
            mod = importlib.import_module(info.name)
            own = [n for n, c in inspect.getmembers(mod, inspect.isclass)
                   if issubclass(c, BaseException) and c.__module__ == mod.__name__]
            assert own == [], f"{info.name} defines {own}"
    codes = {errors.RunFailed: 4, errors.NotebookInputError: 1, errors.NotebookTimeout: 10, errors.ReportExists: 5,
             errors.ReportLocked: 7, errors.ReportsFolderError: 8, errors.KernelNotFound: 9,
             errors.InputError: 1, errors.ParameterError: 1, errors.SLAParseError: 1}
    for cls, code in codes.items():
        assert issubclass(cls, BearingError) and cls.exit_code == code, cls
    assert issubclass(errors.NotebookInputError, errors.RunFailed)
    assert runner.RunFailed is errors.RunFailed and runner.ReportExists is errors.ReportExists
    assert (runner.EXIT_ERROR, runner.EXIT_FAILED, runner.EXIT_EXISTS, runner.EXIT_LOCKED, runner.EXIT_FOLDER,
            runner.EXIT_NO_KERNEL, runner.EXIT_TIMEOUT) == (1, 4, 5, 7, 8, 9, 10)
    # the user-facing table documents every code
    doc = (ROOT / "docs" / "report.md").read_text()
    table = doc.split("### Exit codes", 1)[1].split("\n\n", 2)[1]
    codes = sorted({int(m) for m in re.findall(r"^\| (\d+) \|", table, flags=re.M)})
    assert codes == [*range(11), 70]  # 70: internal error (any command)


def test_no_bare_value_or_key_error_escapes_the_runner(tmp_path, monkeypatch):
    bad_nb = tmp_path / "broken.ipynb"
    bad_nb.write_text("{not a notebook")
    with pytest.raises(ParameterError, match=r"broken\.ipynb cannot be read as a notebook \(NotJSONError"):
        runner.notebook_parameters(bad_nb)
    assert collect(tmp_path / "none") == ReportsIndex([], [])
    # papermill's NoSuchKernel is a KeyError: it becomes KernelNotFound and nothing is published
    monkeypatch.setattr(runner, "check_kernel", lambda name: None)
    with pytest.raises(errors.KernelNotFound, match="kernel 'no-such-kernel-x' is not installed"):
        runner.run_report([runner.NotebookStep(HAND_MADE / "notebooks" / "weekly_report.ipynb")], name="k",
                          reports_dir=tmp_path / "r", kernel_name="no-such-kernel-x", progress=False,
                          given={"limits_json": str(HAND_MADE / "limits.json"),
                                 "plan_json": str(HAND_MADE / "plan.json")})
    assert not (tmp_path / "r" / "k").exists() and _hidden_dirs(tmp_path / "r") == []


# ------------------------------------------------------------------ SIGKILL at any point


@pytest.mark.parametrize("stage, expected", [
    ("running", "red"), ("published", "yellow"),
    pytest.param("locked", "red", marks=pytest.mark.slow),
    pytest.param("executed", "red", marks=pytest.mark.slow),
    pytest.param("swapped", "yellow", marks=pytest.mark.slow),
])
def test_killed_run_leaves_the_old_or_the_new_report(stage, expected, tmp_path, old_reports, notebooks):
    reports = tmp_path / "reports"
    shutil.copytree(old_reports, reports)
    assert _published(reports) == "red" and _index(reports) == {WEEK: "red"}
    marker = tmp_path / "paused"
    proc = _start(["weekly", "--week", WEEK, "--force", *_args(reports, notebooks, HAND_MADE / "plan.json")],
                  tmp_path, BEARING_PAUSE_AT=stage, BEARING_PAUSE_FILE=str(marker))
    assert _wait_for(marker, proc) == f"{proc.pid} {stage}"
    _kill(proc)
    assert proc.returncode == -signal.SIGKILL
    assert _published(reports) == expected  # the old complete report before the swap, the new one after
    # before the swap the index was never touched; killed after the swap but before the index was
    # rewritten ("swapped", "published"), it still lists the old report until the next run
    assert _index(reports) == {WEEK: "red"}
    # any next run of that report (here one refused because the week exists) repairs: index, leftovers
    again = cli.invoke(app, ["weekly", "--week", WEEK, *_args(reports, notebooks, HAND_MADE / "plan.json")])
    assert again.exit_code == runner.EXIT_EXISTS, again.output
    assert _index(reports) == {WEEK: expected} and _hidden_dirs(reports) == []
    assert (reports / f".lock-{WEEK}").read_text() == ""  # the killed run's lock record is gone with its lock


@pytest.mark.slow
@pytest.mark.parametrize("delay_s", [1.0, 3.0, 6.0, 9.0])
def test_killed_after_a_fixed_delay(delay_s, tmp_path, old_reports, notebooks):
    reports = tmp_path / "reports"
    shutil.copytree(old_reports, reports)
    proc = _start(["weekly", "--week", WEEK, "--force", *_args(reports, notebooks, HAND_MADE / "plan.json")],
                  tmp_path)
    time.sleep(delay_s)
    _kill(proc)
    verdict = _published(reports)
    assert verdict in ("red", "yellow")
    if proc.returncode == 0:  # finished before the kill: the new report, indexed
        assert verdict == "yellow" and _index(reports) == {WEEK: "yellow"}
    again = cli.invoke(app, ["weekly", "--week", WEEK, *_args(reports, notebooks, HAND_MADE / "plan.json")])
    assert again.exit_code == runner.EXIT_EXISTS
    assert _index(reports) == {WEEK: verdict} and _hidden_dirs(reports) == []


# ------------------------------------------------------------------ concurrent runs


def test_second_weekly_run_of_the_same_week_exits_7_and_a_killed_holder_frees_the_lock(tmp_path, notebooks):
    reports = tmp_path / "reports"
    marker = tmp_path / "paused"
    week = "2026-W49"
    holder = _start(["weekly", "--week", week, *_args(reports, notebooks, HAND_MADE / "plan.json")], tmp_path,
                    BEARING_PAUSE_AT="locked", BEARING_PAUSE_FILE=str(marker))
    try:
        _wait_for(marker, holder)
        second = cli.invoke(app, ["weekly", "--week", week, *_args(reports, notebooks, HAND_MADE / "plan.json")])
        assert second.exit_code == runner.EXIT_LOCKED == 7, second.output
        assert (f"another run of report '{week}' is in progress (pid {holder.pid} on host {socket.gethostname()}, "
                "started 20") in second.output
        assert "nothing ran" in second.output
        assert not (reports / week).exists() and _hidden_dirs(reports) == []
    finally:
        _kill(holder)
    # the kernel released the dead holder's flock: no stale lock, the next run runs
    third = cli.invoke(app, ["weekly", "--week", week, *_args(reports, notebooks, HAND_MADE / "plan.json")])
    assert third.exit_code == runner.EXIT_OK, third.output
    assert json.loads((reports / week / "summary.json").read_text())["verdict"] == "yellow"


def test_a_holder_past_its_longest_run_is_called_hung(tmp_path, no_kernel):
    reports = tmp_path / "reports"
    reports.mkdir()
    lock = reports / ".lock-w"
    record = {"pid": 4242, "host": "cron-1", "started_utc": "2026-11-30T06:00:00+00:00",
              "expires_utc": "2026-11-30T08:00:00+00:00"}
    lock.write_text(json.dumps(record))
    with lock.open("r+") as fh:  # another open file description: conflicts like another process would
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(errors.ReportLocked) as err:
            runner.run_report([runner.NotebookStep(HAND_MADE / "notebooks" / "weekly_report.ipynb")], name="w",
                              reports_dir=reports, given={"limits_json": str(HAND_MADE / "limits.json"),
                                                          "plan_json": str(HAND_MADE / "plan.json")})
    msg = str(err.value)
    assert "pid 4242 on host cron-1, started 2026-11-30T06:00:00+00:00" in msg
    assert "looks hung: end pid 4242 on cron-1" in msg and err.value.holder == record
    assert json.loads(lock.read_text()) == record  # the lock is reported, never broken


# ------------------------------------------------------------------ reports folder, kernel, timeout


def test_unusable_reports_folder_exits_8_before_anything_runs(tmp_path, no_kernel, monkeypatch):
    r = cli.invoke(app, ["report", "--name", "x", *_args(tmp_path / "missing-parent" / "reports",
                                                         HAND_MADE / "notebooks", HAND_MADE / "plan.json")])
    assert r.exit_code == runner.EXIT_FOLDER == 8, r.output
    assert "its parent folder" in r.output and "does not exist (a mistyped path?)" in r.output
    assert not (tmp_path / "missing-parent").exists()
    a_file = tmp_path / "reports-file"
    a_file.write_text("not a folder")
    r = cli.invoke(app, ["report", "--name", "x", *_args(a_file, HAND_MADE / "notebooks", HAND_MADE / "plan.json")])
    assert r.exit_code == 8 and "is not a folder" in r.output
    # a read-only file system (the kernel's EROFS, injected at the first write into the folder)
    reports = tmp_path / "ro"
    reports.mkdir()
    real_open = os.open

    def ro_open(path, flags, *a, **k):
        if str(path).startswith(str(reports)) and flags & (os.O_CREAT | os.O_WRONLY | os.O_RDWR):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return real_open(path, flags, *a, **k)

    monkeypatch.setattr(os, "open", ro_open)
    r = cli.invoke(app, ["report", "--name", "x", *_args(reports, HAND_MADE / "notebooks", HAND_MADE / "plan.json")])
    monkeypatch.undo()
    assert r.exit_code == 8, r.output
    assert f"reports folder {reports}: cannot create the lock file .lock-x (the file system is read-only)" in r.output
    assert list(reports.iterdir()) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a mode-0555 folder")
def test_read_only_reports_folder_by_permissions(tmp_path, no_kernel):
    reports = tmp_path / "ro"
    reports.mkdir()
    reports.chmod(0o555)
    try:
        r = cli.invoke(app, ["report", "--name", "x", *_args(reports, HAND_MADE / "notebooks",
                                                             HAND_MADE / "plan.json")])
    finally:
        reports.chmod(0o755)
    assert r.exit_code == 8 and "permission denied" in r.output


def test_missing_kernel_exits_9_before_anything_runs(tmp_path, no_kernel):
    reports = tmp_path / "reports"
    r = cli.invoke(app, ["report", "--name", "x", "--kernel", "no-such-kernel-x",
                         *_args(reports, HAND_MADE / "notebooks", HAND_MADE / "plan.json")])
    assert r.exit_code == runner.EXIT_NO_KERNEL == 9, r.output
    assert "the Jupyter kernel 'no-such-kernel-x' is not installed (installed: " in r.output
    assert "python3" in r.output and "nothing ran" in r.output
    assert not reports.exists()


def test_cell_past_the_timeout_exits_10_and_keeps_the_executed_copy(tmp_path, notebooks):
    reports = tmp_path / "reports"
    t0 = time.monotonic()
    # 20 s: the imports cell alone can take several seconds on a loaded machine
    r = cli.invoke(app, ["report", "--name", "slow", "--timeout", "20",
                         *_args(reports, notebooks, HAND_MADE / "plan.json"), "-p", "sleep_s", "600"])
    assert time.monotonic() - t0 < 300  # interrupted, not slept out
    assert r.exit_code == runner.EXIT_TIMEOUT == 10, r.output
    assert "weekly_report.ipynb: cell 5 of the notebook ran longer than the cell timeout of 20 s" in r.output
    assert not (reports / "slow").exists()
    failed = [p for p in reports.iterdir() if p.name.startswith("slow.failed-")]
    assert len(failed) == 1 and f"Executed copy kept: {failed[0] / 'weekly_report.ipynb'}" in r.output
    nb = nbformat.read(failed[0] / "weekly_report.ipynb", as_version=4)
    started = [c for c in nb.cells if c.metadata.papermill.get("start_time")]
    assert started[-1].source.endswith("time.sleep(sleep_s)")  # the interrupted cell, the last one started
    assert started[-1].metadata.papermill["duration"] == pytest.approx(20, abs=5)
    assert _index(reports) == {failed[0].name: "failed"}


# ------------------------------------------------------------------ bad input: before or inside a notebook


def test_bad_input_inside_a_notebook_exits_1_and_a_rerun_replaces_the_failed_entry(tmp_path, notebooks):
    reports = tmp_path / "reports"
    r = cli.invoke(app, ["report", "--name", "adhoc", *_args(reports, notebooks, HAND_MADE / "plan.json"),
                         "-p", "bad_row", "7"])
    assert r.exit_code == runner.EXIT_ERROR == 1, r.output
    assert ("error: bad input: weekly_report.ipynb failed in cell 6 of the notebook (execution count 6, "
            "'from bearing_lib.common.errors import BadValueError'): BadValueError: prod.csv, row 7, field "
            "'latency_ms': expected a number, found 'abc'") in r.output
    failed = [p for p in reports.iterdir() if p.name.startswith("adhoc.failed-")]
    assert len(failed) == 1 and not (reports / "adhoc").exists()
    assert _index(reports) == {failed[0].name: "failed"}  # the index is refreshed after a failure
    time.sleep(1.1)  # failure stamps have a resolution of one second
    ok = cli.invoke(app, ["report", "--name", "adhoc", *_args(reports, notebooks, HAND_MADE / "plan.json")])
    assert ok.exit_code == 0, ok.output
    assert _index(reports) == {"adhoc": "yellow"}  # the rerun replaced the failed entry
    assert failed[0].is_dir()  # the evidence stays on disk


def test_only_the_latest_failure_of_a_report_is_listed(tmp_path):
    for name in ("w.failed-20261130T060000Z", "w.failed-20261130T070000Z", "v.failed-20261130T060000Z", "v"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "weekly_report.ipynb").write_text("{}")
    (tmp_path / "v" / "summary.json").write_text(json.dumps(summary_doc("v", run_time_utc="2026-11-30T06:30:00Z")))
    got = collect(tmp_path)
    assert [(f.name, f.earlier) for f in got.failed] == [("w.failed-20261130T070000Z", 1)]
    assert [e.name for e in got.reports] == ["v"]  # v's failure at 06:00 was replaced by its 06:30 run
    # a failure after the report's run is listed beside the (old) report
    (tmp_path / "v.failed-20261130T080000Z").mkdir()
    assert [f.name for f in collect(tmp_path).failed] == ["v.failed-20261130T080000Z",
                                                                "w.failed-20261130T070000Z"]


def _real(reports: Path, *params: str) -> list[str]:
    return ["report", "--name", "x", "--reports-dir", str(reports), *params]


def test_bad_input_found_before_any_kernel_starts_exits_1(tmp_path, no_kernel):
    reports = tmp_path / "reports"
    limits = str(HAND_MADE / "limits.json")
    prod = str(ROOT / "data/traces/azure-llm-inference-2023/AzureLLMInferenceTrace_conv.csv")
    sweep = str(ROOT / "data/loadtests/lmbenchmark-llm-d-exp2/llm-d-70b-2replicas")
    cases = [
        (["-p", "limits_json", limits, "-p", "production_trace", str(tmp_path / "nope.csv")],
         f"{tmp_path / 'nope.csv'}: the production trace (parameter production_trace (weekly_report.ipynb)) "
         "does not exist"),
        (["-p", "limits_json", str(HAND_MADE / "README.md"), "-p", "production_trace", prod],
         "README.md: the limits JSON is not valid JSON"),
        (["-p", "loadtest", sweep, "-p", "sla", "p95(ttft) <= soon", "-p", "production_trace", prod],
         "p95(ttft) <= soon"),
        (["-p", "limits_json", limits, "-p", "production_trace", prod, "-p", "tier", "gold"],
         "unknown service tier 'gold'; expected one of critical, standard, non-core"),
        (["-p", "limits_json", limits, "-p", "production_trace", str(HAND_MADE / "README.md")],
         "no known format fits"),
    ]
    for params, message in cases:
        r = cli.invoke(app, _real(reports, *params))
        assert r.exit_code == runner.EXIT_ERROR, (params, r.output)
        assert message in r.output, (message, r.output)
        assert "Traceback" not in r.output
    assert not reports.exists()


# ------------------------------------------------------------------ very large inputs


def _sparse_csv(path: Path, size: int) -> Path:
    with path.open("wb") as fh:
        fh.write(b"timestamp,ContextTokens,GeneratedTokens\n")
        fh.truncate(size)
    if path.stat().st_blocks * 512 > 16 * 2**20:
        path.unlink()
        pytest.skip("this file system does not keep sparse files sparse")
    return path


def test_a_2_gb_csv_is_refused_before_any_kernel_starts(tmp_path, no_kernel):
    big = _sparse_csv(tmp_path / "huge.csv", 2_000_000_000)  # 2 GB apparent size, nothing on disk
    r = cli.invoke(app, _real(tmp_path / "reports", "-p", "limits_json", str(HAND_MADE / "limits.json"),
                              "-p", "production_trace", str(big)))
    assert r.exit_code == runner.EXIT_ERROR, r.output
    assert (f"{big}: the production trace is too large to read into memory: 2.00 GB of text; bearing report "
            "reads CSV / JSON-lines inputs whole and refuses 2 GB or more") in r.output
    assert f"pl.scan_csv('{big}').sink_parquet('{tmp_path / 'huge.parquet'}')" in r.output
    assert big.stat().st_size == 2_000_000_000  # the input is never modified
    # one byte less passes the size check (and then fails format detection: the sparse rows are NUL bytes)
    small = _sparse_csv(tmp_path / "almost.csv", 1_999_999_999)
    pipeline.check_input_size(small)


def test_size_check_counts_a_folders_text_files_and_skips_parquet(tmp_path):
    folder = tmp_path / "steps"
    folder.mkdir()
    for i, n in enumerate((600, 500)):
        (folder / f"step{i}.csv").write_bytes(b"x" * n)
    pl.DataFrame({"a": list(range(2000))}).write_parquet(folder / "big.parquet")
    parquet_size = (folder / "big.parquet").stat().st_size
    assert parquet_size > 1000
    with pytest.raises(InputError) as err:
        pipeline.check_input_size(folder, "load-test output", limit=1000)
    assert "2 text files together hold 0.00 GB (the largest, step0.csv, 0.00 GB)" in str(err.value)
    (folder / "step1.csv").unlink()
    pipeline.check_input_size(folder, limit=1000)  # 600 bytes of CSV; the Parquet file does not count
    pipeline.check_input_size(folder / "big.parquet", limit=100)
    # the notebooks' loader refuses it too (papermill by hand gets the same message)
    with pytest.raises(InputError, match="too large to read into memory"):
        pipeline.load(_sparse_csv(tmp_path / "huge.csv", 2_000_000_000))


# ------------------------------------------------------------------ publishing without a kernel (fake papermill)


def _fake_execute(verdict: str):
    """papermill.execute_notebook stand-in writing the three files of a report with ``verdict``."""
    def execute(inp, out, parameters, **kwargs):
        d = Path(parameters["output_dir"])
        (d / "report.html").write_text(f"<html>{verdict}</html>")
        (d / "summary.json").write_text(json.dumps(summary_doc(d.name, verdict=verdict)))
        Path(out).write_text("{}")
    return execute


GIVEN = {"limits_json": str(HAND_MADE / "limits.json"), "plan_json": str(HAND_MADE / "plan.json")}
STANDIN = HAND_MADE / "notebooks" / "weekly_report.ipynb"


def test_a_report_named_index_does_not_share_the_index_lock(tmp_path, monkeypatch):
    import papermill

    monkeypatch.setattr(papermill, "execute_notebook", _fake_execute("green"))
    res = runner.run_report([runner.NotebookStep(STANDIN)], name="index", reports_dir=tmp_path, given=GIVEN,
                            progress=False)
    assert res.verdict == "green" and (tmp_path / "index" / "report.html").is_file()
    assert 'href="./index/report.html"' in (tmp_path / "index.html").read_text()
    with pytest.raises(ParameterError, match="not index.html"):
        runner.validate_name("index.html")


def test_two_step_swap_where_the_exchange_is_missing_and_its_repair(tmp_path, monkeypatch):
    import papermill

    monkeypatch.setattr(papermill, "execute_notebook", _fake_execute("yellow"))
    monkeypatch.setattr(runner, "_exchange", lambda a, b: False)  # e.g. not Linux
    runner.run_report([runner.NotebookStep(STANDIN)], name="w", reports_dir=tmp_path, given=GIVEN, progress=False)
    monkeypatch.setattr(papermill, "execute_notebook", _fake_execute("green"))
    runner.run_report([runner.NotebookStep(STANDIN)], name="w", reports_dir=tmp_path, given=GIVEN, force=True,
                      progress=False)
    assert json.loads((tmp_path / "w" / "summary.json").read_text())["verdict"] == "green"
    assert _hidden_dirs(tmp_path) == []
    # the state a kill between the two renames leaves: the old report aside, no reports/w/
    os.replace(tmp_path / "w", tmp_path / ".old-w-0123abcd")
    (tmp_path / ".tmp-w-89abcdef").mkdir()  # and a killed run's temporary folder
    with pytest.raises(errors.ReportExists):  # the next run puts the old report back, then refuses
        runner.run_report([runner.NotebookStep(STANDIN)], name="w", reports_dir=tmp_path, given=GIVEN, progress=False)
    assert json.loads((tmp_path / "w" / "summary.json").read_text())["verdict"] == "green"
    assert _hidden_dirs(tmp_path) == []
    assert 'href="./w/report.html"' in (tmp_path / "index.html").read_text()


@pytest.mark.slow
def test_two_overlapping_weekly_processes_one_runs_the_other_exits_7(tmp_path, notebooks):
    reports = tmp_path / "reports"
    reports.mkdir()
    args = ["weekly", "--week", "2026-W50", *_args(reports, notebooks, HAND_MADE / "plan.json")]
    # the first pauses once it holds the lock (its marker says so); only then the second starts, so
    # the two overlap however slowly a loaded machine starts a process (a fixed head start did not)
    marker = tmp_path / "locked.marker"
    first = _start(args, tmp_path, BEARING_PAUSE_AT="locked", BEARING_PAUSE_S="20", BEARING_PAUSE_FILE=str(marker))
    procs = [first]
    try:
        _wait_for(marker, first)
        procs.append(_start(args, tmp_path))
        results = [p.communicate(timeout=300) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                _kill(p)
    codes = sorted(p.returncode for p in procs)
    assert codes == [runner.EXIT_OK, runner.EXIT_LOCKED], [r[1].decode()[-500:] for r in results]
    loser = results[[p.returncode for p in procs].index(runner.EXIT_LOCKED)][1].decode()
    winner = procs[[p.returncode for p in procs].index(runner.EXIT_OK)]
    assert f"another run of report '2026-W50' is in progress (pid {winner.pid} on host" in loser
    assert json.loads((reports / "2026-W50" / "summary.json").read_text())["verdict"] == "yellow"
    assert _index(reports) == {"2026-W50": "yellow"} and _hidden_dirs(reports) == []


@pytest.mark.slow
def test_a_bad_row_deep_in_a_real_trace_exits_1_from_the_real_notebook(tmp_path):
    """The format is detected before the run (the header is right); only the loader, inside
    weekly_report.ipynb, reaches the bad 51st data row (row 52 of the file, as the loader counts:
    the header is row 1). Exit 1, not 4; the executed copy is kept; the input is not modified."""
    azure = ROOT / "data/traces/azure-llm-inference-2023/AzureLLMInferenceTrace_conv.csv"
    bad = tmp_path / "prod.csv"
    bad.write_text("".join(azure.read_text().splitlines(keepends=True)[:51]) + "2023-11-16 18:17:03.9799600,abc,12\n")
    before = bad.read_bytes()
    reports = tmp_path / "reports"
    r = cli.invoke(app, ["report", "--name", "bad", "--reports-dir", str(reports),
                         "-p", "limits_json", str(HAND_MADE / "limits.json"), "-p", "production_trace", str(bad)])
    assert r.exit_code == runner.EXIT_ERROR, r.output
    # cell 7 of the source notebook; execution count 5 because papermill's injected cell runs too
    assert "error: bad input: weekly_report.ipynb failed in cell 7 of the notebook (execution count 5, " in r.output
    assert f"BadValueError: {bad}, row 52, field 'ContextTokens': expected a whole number, found 'abc'" in r.output
    assert not (reports / "bad").exists() and bad.read_bytes() == before
    assert [p.name.split(".failed-")[0] for p in reports.iterdir() if ".failed-" in p.name] == ["bad"]
