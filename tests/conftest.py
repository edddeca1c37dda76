"""Shared test fixtures.

Real files that bearing may not redistribute are read in place from the folder named by
``BEARING_SHARED_DATA`` (``.ci/run`` sets it). Tests that need them take the
``shared_data`` fixture and carry the ``shared_data`` marker: they are skipped when the
variable is unset (a user's clone) and FAIL when it is set and a file is missing.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BUNDLED = ROOT / "data"
ENV = "BEARING_SHARED_DATA"


@pytest.fixture
def bundled() -> Callable[[str], Path]:
    """Path of a file bundled under ``data/`` (always present in a clone)."""

    def _get(rel: str) -> Path:
        p = BUNDLED / rel
        assert p.exists(), f"bundled file missing from the repository: data/{rel}"
        return p

    return _get


@pytest.fixture
def shared_data(request: pytest.FixtureRequest) -> Callable[[str], Path]:
    """Path of a file under $BEARING_SHARED_DATA; skip when unset, fail when missing."""
    if request.node.get_closest_marker("shared_data") is None:
        raise pytest.UsageError(f"{request.node.nodeid} uses shared_data without the shared_data marker")
    base = os.environ.get(ENV)
    if not base:
        pytest.skip(f"{ENV} is not set: real files read in place are not available")

    def _get(rel: str) -> Path:
        p = Path(base) / rel
        if not p.exists():
            pytest.fail(f"{ENV}={base} is set but {rel} is missing there")
        return p

    return _get


@dataclass
class BearingRuns:
    """``bearing`` subprocess runs shared by the whole session: each distinct command line runs once, its
    outputs under :attr:`work` (one session folder), and a later identical call gets the same result back.

    The report matrix (tests/report/test_matrix.py) and the consistency checks (tests/report/test_consistency.py)
    read the same 27 reports: whichever file runs first builds them, the other reads them."""

    work: Path
    done: dict[tuple[str, ...], subprocess.CompletedProcess] = field(default_factory=dict)

    def run(self, *args: str, timeout: float = 1800) -> subprocess.CompletedProcess:
        """``python -m bearing_lib.cli.main *args`` from the project root (once per distinct ``args``)."""
        key = tuple(str(a) for a in args)
        if key not in self.done:
            env = {**os.environ, "PYTHONPATH": str(ROOT)}
            self.done[key] = subprocess.run([sys.executable, "-m", "bearing_lib.cli.main", *key], capture_output=True,
                                            text=True, env=env, cwd=ROOT, timeout=timeout)
        return self.done[key]

    def run_all(self, commands: list[tuple[str, ...]], workers: int = 2) -> list[subprocess.CompletedProcess]:
        """:meth:`run` for independent command lines, ``workers`` at a time (each is a separate ``bearing``
        process: the machine's two cores both work while a report's notebook kernels start or wait). The
        results come back in the order given; a command line already run is not run again."""
        from concurrent.futures import ThreadPoolExecutor

        todo = list(dict.fromkeys(tuple(str(a) for a in c) for c in commands))
        with ThreadPoolExecutor(max_workers=max(1, min(workers, os.cpu_count() or 1))) as pool:
            list(pool.map(lambda key: self.run(*key), todo))
        return [self.run(*c) for c in commands]

    def demo(self) -> tuple[subprocess.CompletedProcess, Path]:
        """``bearing report --demo`` (the bundled real data, 200 resamples) as a user runs it, built once for the
        session: the demo's values (tests/report/test_demo.py) and its look in Chromium (test_browser.py) read the
        same report. Returns the run and the report folder."""
        reports = self.work / "demo-reports"
        return self.run("report", "--demo", "--reports-dir", str(reports), "-p", "n_boot", "200"), reports / "demo"


@pytest.fixture(scope="session")
def bearing_runs(tmp_path_factory: pytest.TempPathFactory) -> BearingRuns:
    """The session's shared ``bearing`` runs (:class:`BearingRuns`)."""
    return BearingRuns(tmp_path_factory.mktemp("bearing-runs"))


SLOW_TESTS = Path(__file__).with_name("slow_tests.txt")


def _slow_ids() -> set[str]:
    lines = SLOW_TESTS.read_text(encoding="utf-8").splitlines()
    return {x.strip() for x in lines if x.strip() and not x.startswith("#")}


@pytest.hookimpl(tryfirst=True)  # before -m/-k deselect anything
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the tests listed in ``tests/slow_tests.txt`` as ``slow`` (the fast lane, ``make check``, runs
    ``-m "not slow"``); a listed test missing from a collected file is an error naming it. Tests of the session's
    shared ``bearing`` runs go to one pytest-xdist worker (group ``bearing_runs``; :func:`_group_ids`)."""
    slow = _slow_ids()
    seen: set[str] = set()
    files: set[str] = set()
    for item in items:
        base = item.nodeid.split("[", 1)[0]
        files.add(base.split("::", 1)[0])
        if base in slow:
            item.add_marker(pytest.mark.slow)
            seen.add(base)
        if "bearing_runs" in getattr(item, "fixturenames", ()):
            # one pytest-xdist worker runs every test of the session's shared runs (`make test` runs two workers,
            # `--dist loadgroup`): the 27 reports and the demo are then built once, not once per worker
            item.add_marker(pytest.mark.xdist_group("bearing_runs"))
    whole_files = not any("::" in str(a) for a in config.args)  # a test picked by node id leaves its file's others out
    gone = sorted(x for x in slow - seen if x.split("::", 1)[0] in files) if whole_files else []
    if gone:
        raise pytest.UsageError(f"{SLOW_TESTS.name} lists tests that do not exist (renamed?): {', '.join(gone)}")


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's worker sends the collected ids to the scheduler
def pytest_collection_finish(session: pytest.Session) -> None:
    """On a pytest-xdist worker run with ``--dist loadgroup``: :func:`_group_ids`, once every other collection
    hook (``-m``, ``-k``, ``--lf``) has chosen the tests by their plain ids."""
    if getattr(session.config.option, "loadgroup", False):
        _group_ids(session.items)


_GROUP_SUFFIX = re.compile(r"(?<=[\w\]])@\w+$")
"""The ``@group`` pytest-xdist's scheduler reads at the end of a node id (after a name or a ``[params]``; a ``@``
inside the brackets is a parameter's)."""


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """On the pytest-xdist controller: a worker's report back under the test's plain id, so the ``-ra`` summary,
    ``--durations``, JUnit XML and the ``--lf`` cache say the id ``pytest`` takes back (the scheduler reads the
    ids the workers sent at collection, not the reports')."""
    if "@" in (report.nodeid or "") and "PYTEST_XDIST_WORKER" not in os.environ:  # a worker checks the id it sent
        report.nodeid = _GROUP_SUFFIX.sub("", report.nodeid)


def _group_ids(items: list[pytest.Item]) -> None:
    """Suffix each ``xdist_group`` test's node id with its groups (``…::test[p]@group``), the form pytest-xdist's
    ``loadgroup`` scheduler reads to send a group to one worker.

    pytest-xdist 3.8 (its newest) does this in its own worker hook by assigning ``item._nodeid``, but pytest 9
    derives ``Item.nodeid`` from ``item._id`` (a ``NodeId``), so that assignment no longer reaches the scheduler
    and ``--dist loadgroup`` silently spreads a group over both workers (the 27-report matrix and the demo were then
    built once per worker). Written here, in the scheduler's own format, until pytest-xdist follows pytest; a test
    id that already carries its groups (a fixed pytest-xdist) is left as it is. The suffix goes into the id's last
    name with its parameters (``params`` None), so any form rebuilt from the id reads the same string (parsing
    ``"…[p]@group"`` would put it inside the brackets: ``"[p]@group]"``); :func:`pytest_runtest_logreport` takes
    it off again on the controller."""
    try:
        from _pytest.nodeid import NodeId
    except ImportError:  # pytest < 9: pytest-xdist's own assignment works
        return
    for item in items:
        names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                        for m in item.iter_markers("xdist_group")})
        nid = getattr(item, "_id", None)
        if not names or not isinstance(nid, NodeId) or not nid.names:
            continue
        suffix = "@" + "_".join(names)
        if item.nodeid.endswith(suffix):
            continue
        last = nid.names[-1] + (f"[{nid.params}]" if nid.params is not None else "") + suffix
        item._id = NodeId(path=nid.path, names=(*nid.names[:-1], last))
