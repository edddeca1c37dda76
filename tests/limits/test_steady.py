"""MSER-5 warm-up truncation (bearing_lib.limits.steady) on series whose transient is known."""

from __future__ import annotations

import numpy as np

from bearing_lib.limits.fit import fit_limits
from bearing_lib.limits.steady import mser
from tests.limits.synth import make_trace, mm1_frame


def test_flat_series_is_not_truncated_much():
    rng = np.random.default_rng(0)
    d, settled = mser(rng.normal(100.0, 5.0, 2000))
    assert settled and d < 200


def test_a_known_warm_up_is_found():
    # 500 observations decaying from 400 to 100, then 1,500 flat at 100 (noise 5): truncation near 500
    rng = np.random.default_rng(1)
    warm = 100.0 + 300.0 * np.exp(-np.arange(500) / 100.0)
    x = np.r_[warm, np.full(1500, 100.0)] + rng.normal(0, 5.0, 2000)
    d, settled = mser(x)
    assert settled and 300 <= d <= 700


def test_a_rising_series_never_settles():
    # a queue filling up: latency rising linearly through the whole window
    rng = np.random.default_rng(2)
    d, settled = mser(np.linspace(100.0, 2000.0, 2000) + rng.normal(0, 5.0, 2000))
    assert not settled and d >= 2000 // 2 - 2 * 5


def test_too_short_says_nothing():
    assert mser(np.arange(15.0)) == (0, True)


def test_every_step_of_a_fit_carries_its_mser5():
    tr = make_trace(mm1_frame([2.0, 5.0, 14.0], mu_rps=10.0, step_s=300.0, seed=3))
    m = fit_limits(tr, "p99(latency) <= 1s", mixes="none", n_boot=0).limits[0]
    by = {s.offered_load: s.mser5 for s in m.steps}
    assert all(v.rule == "MSER-5" and v.of > 0 for v in by.values())
    assert by[2.0].settled
    # far above capacity (14 rps against mu = 10) the queue grows by ~4 requests/s through the step: never settles
    # (a mild overload, 11 rps, rising 1.7 -> 2.7 s over the window, is not caught by MSER-5; the trend test flags it)
    assert not by[14.0].settled
