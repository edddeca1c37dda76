"""The round-11 yardstick (tests/oracle/yardstick.py) against closed forms."""

import math

import numpy as np
import pytest

from tests.oracle.yardstick import Bank, StepCounts, clause_of, pass_code, posterior, step_counts, summary


def test_a_sharp_threshold_gives_the_log_uniform_posterior_over_the_bracket():
    # a server whose steps pass below the truth and fail above it, every time: the bank says so at every ratio.
    # A test passing at 0.9 and failing at 1.1 (truth 1) then leaves the truth log-uniform on (0.9, 1.1]:
    # median sqrt(0.99), 95 % interval 0.9 * (1.1 / 0.9) ** {0.025, 0.975}.
    ratio = np.linspace(0.2, 2.0, 20_001)
    bank = Bank(ratio=ratio, score=np.where(ratio < 1.0, 0.0, 10.0))
    loads = np.array([0.5, 0.7, 0.9, 1.1, 1.3])
    n = np.full(5, 1000)
    bad = np.array([0, 0, 0, 1000, 1000])
    assert pass_code(bad, n, 0.01).tolist() == [0.0, 0.0, 0.0, 10.0, 10.0]
    med, lo, hi = summary(posterior(bank, StepCounts(loads, n, bad), 1.0, pattern=True))
    a, b = 0.9, 1.1
    # the kernel (H_RATIO = 0.012) blurs each end of the bracket by about 1 %; the grid is 0.1 % apart
    assert med == pytest.approx(math.sqrt(a * b), rel=0.004)
    assert lo == pytest.approx(a * (b / a) ** 0.025, rel=0.012)
    assert hi == pytest.approx(a * (b / a) ** 0.975, rel=0.012)


def test_a_step_outside_the_bank_carries_no_information():
    ratio = np.linspace(0.8, 1.2, 4001)
    bank = Bank(ratio=ratio, score=np.where(ratio < 1.0, 0.0, 10.0))
    base = StepCounts(np.array([0.9, 1.1]), np.array([500, 500]), np.array([0, 500]))
    far = StepCounts(np.array([0.1, 0.9, 1.1]), np.array([500, 500, 500]), np.array([0, 0, 500]))
    assert np.allclose(posterior(bank, base, 1.0, pattern=True), posterior(bank, far, 1.0, pattern=True))


def test_clause_of_reads_the_oracle_slas():
    assert clause_of("p99(ttft) <= 3s") == ("ttft", 3.0, pytest.approx(0.01))
    assert clause_of("p99(latency) <= 14s") == ("latency", 14.0, pytest.approx(0.01))
    with pytest.raises(ValueError, match="error_rate"):
        clause_of("error_rate <= 1%")


def test_step_counts_at_low_load_are_the_window_share_of_poisson_arrivals():
    # small/chat at 2 rps for 10 x 120 s: far below its limit (11.9 rps) none is slow, and each window keeps the
    # middle 80 % of the step (latencies of well under a second trim less than 10 %): 2 * 96 = 192 expected,
    # Poisson sd 13.9; over 10 steps the mean is within 4 sd / sqrt(10) of 192
    c = step_counts("small", "chat", [2.0] * 10, seed=11, step_s=120.0)
    assert c.bad.sum() == 0
    assert abs(c.n.mean() - 192.0) < 4 * math.sqrt(192.0) / math.sqrt(10)
