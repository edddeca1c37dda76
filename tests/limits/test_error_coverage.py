"""The model's limit of an error-rate clause holds a known truth: SYNTHETIC stepped runs whose failures rise with
load by ``p(L) = 1 % × (L / truth)^slope`` (``tests/limits/error_coverage.py``, the oracle's 10 × 120 s design),
20 seeds per cell. The bounds are this round's measurement (issue 23, round 18; docs/limits.md, "Error-rate
clauses on a known curve"); a change that lowers a floor or passes a ceiling is a change in what the interval
means, to be measured and recorded there."""

from __future__ import annotations

import math

import pytest

from tests.limits.error_coverage import summary

# (slope, concentration): within ±10 % and covered of 20 (floors; covered as the oracle counts it, both ends
# closed), the median half-width (ceiling) and the median error's size (ceiling), as measured with the model (the
# default estimator) at 1,000 resamples. Failures independent per request (c = inf) or clustered by step (c = 300,
# 100: a step's share at 1 % strays by about 0.6 and 1 point); c = 30, beyond model.ERROR_CONCENTRATIONS, is
# measured in the docs, not held here. At slope 2 five intervals of 20 stay open above (the upper end beyond the
# loads tested): the test holds that too, as a floor of closed intervals.
BOUNDS = {
    (2.0, math.inf): (13, 15, 0.75, 0.03),
    (4.0, math.inf): (17, 20, 0.30, 0.03),
    (12.0, math.inf): (16, 20, 0.12, 0.08),
    (4.0, 100.0): (13, 18, 0.48, 0.06),  # round 20: -1.4 % -> -5.5 % once the steps' scatter widens the grid
    (12.0, 300.0): (20, 19, 0.12, 0.05),
}


@pytest.mark.parametrize(("slope", "concentration"), sorted(BOUNDS))
def test_error_rate_limit_covers_a_rising_failure_curve(slope, concentration):
    r = summary(range(20), slope, concentration)
    within, covered, half_width, error = BOUNDS[(slope, concentration)]
    assert r["no_value"] == 0  # rising failures are never read as a load-independent floor here
    assert r["covered"] >= covered and r["within"] >= within, r
    assert r["median_half_width"] <= half_width and abs(r["median_error"]) <= error, r
