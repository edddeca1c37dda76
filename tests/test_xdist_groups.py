"""``--dist loadgroup`` (``make test``) sends an ``xdist_group`` to one worker: the shared report matrix and the
oracle's two-stage tests rely on it to build their runs once. pytest-xdist 3.8 writes the group into
``item._nodeid``, which pytest 9 no longer reads, so ``tests/conftest.py`` (``_group_ids``) writes it into the
test's id itself; this runs a probe file in a pytest-xdist session of its own and reads where each test ran."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROBE = ROOT / "tests" / "fixtures" / "xdist_group_probe.py"


def test_a_group_runs_on_one_worker():
    run = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-v", "-p", "no:randomly",
                          "-p", "no:cacheprovider", "--no-header", "-o", "addopts=", str(PROBE)],
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    ran = re.findall(r"\[(gw\d)\][^\n]*PASSED[^\n]*::(test_\w+)\[(\d)\](@\w+)?", run.stdout)
    assert len(ran) == 12, run.stdout[-3000:]
    grouped = [(w, suffix) for w, name, _, suffix in ran if name == "test_grouped"]
    assert {s for _, s in grouped} == {"@probe"}  # the id carries the group, in pytest-xdist's format
    assert len({w for w, _ in grouped}) == 1  # and the six ran on one worker
    assert all(s == "" for _, name, _, s in ran if name == "test_free")
    assert len({w for w, *_ in ran}) == 2  # while the others spread over both
