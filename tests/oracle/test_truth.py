"""truth.json is what make_truth.py says it is: matching definitions, tight replicates, and a
fresh long run (new seed) passes the SLA at 0.93x the truth and fails it at 1.07x."""

from __future__ import annotations

import json

import pytest

from tests.oracle.acceptance import TRUTH_PATH, load_truth
from tests.oracle.configs import MIXES, SERVERS, SLAS, combinations
from tests.oracle.make_truth import Replicate, parse_clause

TRUTH = load_truth()


def test_truth_file_covers_every_combination_and_records_its_method():
    doc = json.loads(TRUTH_PATH.read_text())
    assert set(TRUTH) == {f"{s}/{m}" for s, m in combinations()}
    assert len(TRUTH) >= 9
    meth = doc["method"]
    assert meth["duration_s"] >= 1800 and meth["bisection_rel_tol"] <= 0.01
    assert doc["runtime_s"] > 0 and doc["generator"] == "tests/oracle/make_truth.py"
    for key, t in TRUTH.items():
        assert t["sla"] == SLAS[tuple(key.split("/"))]
        # the truth's own uncertainty is small against the +-10% the acceptance test allows
        assert t["relative_sd"] < 0.03, key
        assert abs(sum(t["replicate_rps"]) / len(t["replicate_rps"]) - t["q_ult_rps"]) < 1e-3


@pytest.mark.parametrize("server,mix", combinations())
def test_fresh_long_run_brackets_the_truth(server, mix):
    q = float(TRUTH[f"{server}/{mix}"]["q_ult_rps"])
    clauses = [parse_clause(c) for c in SLAS[(server, mix)]]
    rep = Replicate(MIXES[mix], seed=777, max_rate=1.1 * q)  # a seed make_truth.py never used
    assert rep.margin(SERVERS[server], clauses, 0.93 * q) <= 0
    assert rep.margin(SERVERS[server], clauses, 1.07 * q) > 0
