"""The completed rate's 95 % CI on a closed loop's users axis, against a simulation with known truth.

``tests/limits/closed_loop.py``: users with think time against a 4-slot server (closed M/M/k//N); its completed rate
``X(N)`` is exact (:func:`closed_loop.mmk_closed`), the users at which ``p95(latency) <= 4s`` starts to fail are read
off long simulations. The SLA's crossing lies at the knee (17.25 users; the knee of ``X`` is 16), where the completed
rate still rises: ``X(17.25) = 3.700`` req/s. A stepped test of 8 steps of 120 s at 4, 8, ..., 32 users; the limit's
completed CI (``q_ult.throughput_ci95_rps``, read off the steps, Garwood-widened on this axis) should hold the true
completed rate at the true limit as often as the users' CI holds the true limit (docs/limits.md, "The completed
rate's interval: coverage")."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from tests.limits import closed_loop as cl

USERS = [4, 8, 12, 16, 20, 24, 28, 32]
SLA = "p95(latency) <= 4s"
TRUE_USERS = 17.247
"""``closed_loop.true_limit(4.0, range(14, 21), duration_s=400_000, seed=77)``: 17.2468 users (each integer load a
400,000 s simulation, ~1.4M requests; the share above 4 s is 0.0392 at 16 users and 0.0473 at 17, 0.0583 at 18).
A 40,000 s run gave 17.32: the truth is known to about ±0.1 user."""


def test_the_closed_loop_throughput_is_exact():
    """Below the slots no request waits: ``X(N) = N / (service + think) = N / 4`` exactly; above the knee the
    simulation agrees with the closed form (12 users, 20,000 s: within 2 %)."""
    assert cl.mmk_closed(1) == pytest.approx(0.25) and cl.mmk_closed(4) == pytest.approx(1.0)
    assert cl.mmk_closed(64) == pytest.approx(4.0, rel=1e-6)  # saturated: the slots' rate, 4 / 1 s
    s, e = cl.simulate(12, 20_000.0, np.random.default_rng(3))
    keep = s > 2_000.0
    assert keep.sum() / 18_000.0 == pytest.approx(cl.mmk_closed(12), rel=0.02)
    assert cl.completed_at(TRUE_USERS) == pytest.approx(3.700, abs=0.001)


def test_the_completed_ci_covers_the_true_completed_rate():
    """40 seeds (1000-1039). Measured (round 23, the default model estimator, 100 seeds): the users' CI covers the
    true limit in 100 of 100, the completed CI the true completed rate in 100 of 100; median half-widths 42 % of the
    value (users) and 42 % (completed); the point leaned low (median 15.07 users, −12.6 %; within ±10 % in 33 of
    100; the pooled estimator: median 17.10, −0.8 %, within ±10 % in 78 of 100, both CIs covering in 100 of 100).
    Round 24, a closed loop's lag read by its cycle time (``evidence.closed_settle_share``): median 17.03 (−1.2 %),
    within ±10 % in 79 of 100, the users' CI covering 99 of 100, half-width 37 %; asserted below on the 40 seeds:
    the point within ±10 % in at least 70 % of them (it was 33 % of 100 before)."""
    from bearing_lib.data.provenance import Provenance
    from bearing_lib.data.trace import RequestTrace, conform, validate
    from bearing_lib.limits.fit import fit_limits

    x_true = cl.completed_at(TRUE_USERS)
    users_cov = done_cov = within = 0
    n = 40
    for seed in range(n):
        df = cl.stepped_test(USERS, 120.0, 1000 + seed)
        prov = Provenance(source=f"SIMULATED closed loop seed {seed}", format="oracle", tool="tests.limits.closed_loop",
                          sha256=hashlib.sha256(f"closed/{seed}".encode()).hexdigest(), time_origin="relative")
        (m,) = fit_limits(RequestTrace(frame=validate(conform(df), prov), provenance=prov), SLA, mixes="none").limits
        q = m.q_ult
        # an interval with an open end, or none (a censored fit), counts as a miss: coverage is of closed intervals
        lo, hi = q.ci95 if q.ci95 is not None else (None, None)
        users_cov += lo is not None and hi is not None and lo <= TRUE_USERS <= hi
        within += q.value is not None and abs(q.value / TRUE_USERS - 1) <= 0.10
        dlo, dhi = q.throughput_ci95_rps if q.throughput_ci95_rps is not None else (None, None)
        done_cov += dlo is not None and dhi is not None and dlo <= x_true <= dhi
    assert users_cov >= 0.9 * n and done_cov >= 0.9 * n, (users_cov, done_cov)
    assert within >= 0.7 * n, within
