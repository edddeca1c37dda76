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

# measured with the current estimator (docs/oracle.md, "Acceptance results"; point estimate = mean of the isotonic
# interpolation and the local log-percentile line); fit_limits is deterministic for a fixed seed, so these
# outcomes are exact. small/chat, large/rag, large/prefix and kv_starved/chat left this list there.
KNOWN_MISSES = {
    ("small", "rag"): "16/20 within 10% (worst +15.2%); CI covers 20/20",
    ("small", "prefix"): "19/20 within 10% (worst -12.8%); CI covers 19/20",
    ("kv_starved", "rag"): "18/20 within 10% (worst +12.9%); CI covers 19/20",
    ("kv_starved", "prefix"): "19/20 within 10% (worst -10.0%); CI covers 19/20",
}


def _params():
    out = []
    for s, m in combinations():
        marks = [pytest.mark.slow]
        if (s, m) in KNOWN_MISSES:
            marks.append(pytest.mark.xfail(strict=True, reason=f"estimator misses the targets: {KNOWN_MISSES[(s, m)]}"))
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
