"""The round-10 diagnostic's autocorrelation time against the AR(1) closed form."""

import numpy as np
import pytest
from scipy.signal import lfilter

from tests.oracle.step_clock import inflight, integrated_time


@pytest.mark.parametrize("phi", [0.0, 0.5, 0.8])
def test_integrated_time_of_an_ar1_series_is_its_closed_form(phi):
    rng = np.random.default_rng(7)
    e = rng.standard_normal(200_000)
    x = lfilter([1.0], [1.0, -phi], e)  # x[i] = phi x[i - 1] + e[i]
    assert integrated_time(x) == pytest.approx((1 + phi) / (1 - phi), rel=0.06)


def test_integrated_time_of_a_constant_series_is_undefined():
    assert np.isnan(integrated_time(np.ones(100)))


def test_inflight_counts_requests_sent_and_not_finished():
    # sent at 0, 1, 2; finished at 1.5, 3.5, 2.5: at t = 0.5 one, 1.2 two, 2.2 two (the first finished), 3 one
    start, end = np.array([0.0, 1.0, 2.0]), np.array([1.5, 3.5, 2.5])
    assert inflight(start, end, np.array([0.5, 1.2, 2.2, 3.0])).tolist() == [1, 2, 2, 1]
