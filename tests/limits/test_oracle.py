"""Acceptance: bearing's limit against the simulator oracle's known truth.

For every server x mix combination (tests/oracle/configs.py) and 20 seeds, a SIMULATED
stepped load test (10 steps x 120 s around the truth, tests/oracle/acceptance.py) goes
through ``bearing_lib.limits.fit_limits(trace, sla, mixes="none")``. Targets (issue 6):
the point estimate within +-10% of the truth in every seed, and the 95% CI covering
the truth in at least 18 of 20 seeds. The truth comes from tests/oracle/truth.json, made
by tests/oracle/make_truth.py from long runs (see docs/oracle.md).

KNOWN_MISSES lists the combinations where the estimator missed these targets when this
test was written (strict xfail: the test still runs the full check, and the day a
combination meets the targets the xfail turns into a failure, so the entry gets
removed). The targets themselves are never relaxed here. docs/oracle.md has the table,
the numbers and what in the estimator causes each miss.
"""

from __future__ import annotations

import pytest

from tests.oracle.acceptance import MIN_COVERAGE, N_SEEDS, POINT_TOL, load_truth, score_combination
from tests.oracle.configs import combinations

TRUTH = load_truth()

# measured on limits-core d6eb94e (see docs/oracle.md, "Acceptance results")
KNOWN_MISSES = {
    ("small", "chat"): "CI covers 2/20; 18/20 within 10%",
    ("small", "rag"): "CI covers 2/20; 12/20 within 10%",
    ("small", "prefix"): "CI covers 10/20; 16/20 within 10%",
    ("large", "chat"): "CI covers 3/20; 19/20 within 10%",
    ("large", "rag"): "CI covers 1/20; 15/20 within 10%",
    ("kv_starved", "chat"): "CI covers 5/20; 17/20 within 10%",
    ("kv_starved", "rag"): "CI covers 3/20; 15/20 within 10%",
    ("kv_starved", "prefix"): "CI covers 10/20; 19/20 within 10%",
}
# Near the thresholds (19/20 within 10%, CI covers 17-18/20 depending on the run) and
# fit_limits' CI is not reproducible for a fixed seed (its bootstrap weights follow the row
# order of an unordered collect), so this one passes or fails by chance: non-strict until
# the estimator is deterministic.
AT_THRESHOLD = {
    ("large", "prefix"): "19/20 within 10%; CI covers 17-18/20 depending on run (fit_limits not reproducible)",
}


def _params():
    out = []
    for s, m in combinations():
        marks = [pytest.mark.slow]
        if (s, m) in KNOWN_MISSES:
            marks.append(pytest.mark.xfail(strict=True, reason=f"estimator misses the targets: {KNOWN_MISSES[(s, m)]}"))
        elif (s, m) in AT_THRESHOLD:
            marks.append(pytest.mark.xfail(strict=False, reason=AT_THRESHOLD[(s, m)]))
        out.append(pytest.param(s, m, marks=marks, id=f"{s}/{m}"))
    return out


@pytest.mark.parametrize("server,mix", _params())
def test_limit_against_oracle_truth(server, mix):
    truth = float(TRUTH[f"{server}/{mix}"]["q_ult_rps"])
    scores = score_combination(server, mix, truth)
    assert len(scores) == N_SEEDS
    lines = [
        f"seed {s.seed}: value {s.value} ({'n/a' if s.value is None else f'{s.rel(truth):+.1%}'}), "
        f"ci95 {s.ci95}, bracket {s.bracket}, censored {s.censored}, binding {s.binding}"
        for s in scores
    ]
    report = f"{server}/{mix}, truth {truth:.4g} rps:\n" + "\n".join(lines)
    off = [s for s in scores if not s.within(truth)]
    covered = sum(s.covers(truth) for s in scores)
    assert not off, f"{len(off)}/{N_SEEDS} point estimates outside +-{POINT_TOL:.0%}\n{report}"
    assert covered >= MIN_COVERAGE * N_SEEDS, f"CI covers the truth in {covered}/{N_SEEDS} seeds\n{report}"
