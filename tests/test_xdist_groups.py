"""``--dist loadgroup`` (``make test``) sends an ``xdist_group`` to one worker: the shared report matrix and the
oracle's two-stage tests rely on it to build their runs once. pytest-xdist 3.8 writes the group into
``item._nodeid``, which pytest 9 no longer reads, so ``tests/conftest.py`` (``_group_ids``) writes it into the
test's id itself; this runs a probe file in a pytest-xdist session of its own and reads where each test ran."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

ROOT = Path(__file__).resolve().parents[1]
PROBE = ROOT / "tests" / "fixtures" / "xdist_group_probe.py"


def test_a_group_runs_on_one_worker(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHONPATH"))}
    junit = tmp_path / "probe.xml"
    run = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-v", "-rA", "-p",
                          "no:randomly", "-p", "no:cacheprovider", "--no-header", "-o", "addopts=",
                          f"--junitxml={junit}", str(PROBE)],
                         capture_output=True, text=True, cwd=ROOT, timeout=300, env=env)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    ran = re.findall(r"\[(gw\d)\][^\n]*PASSED[^\n]*::(test_\w+)\[(\d)\]", run.stdout)
    assert len(ran) == 12, run.stdout[-3000:]
    assert len({w for w, name, _ in ran if name == "test_grouped"}) == 1  # the six grouped ran on one worker
    assert len({w for w, *_ in ran}) == 2  # while the others spread over both
    # the scheduler read the group from the ids the worker collected ("…[i]@probe"); the reports come back under the
    # ids pytest takes back, in every form pytest rebuilds (the -rA summary, JUnit XML): no "@probe", no stray "]"
    assert re.findall(r"^\S+::test_grouped\[0\]@probe\s*$", run.stdout, flags=re.M)  # the collected id (-v start)
    summary = re.findall(r"^PASSED \S+::(test_grouped\S*)", run.stdout, flags=re.M)
    assert sorted(summary) == [f"test_grouped[{i}]" for i in range(6)], run.stdout[-3000:]
    cases = ElementTree.parse(junit).getroot().iter("testcase")
    assert sorted(c.get("name") for c in cases if c.get("name").startswith("test_grouped")) == sorted(summary)
