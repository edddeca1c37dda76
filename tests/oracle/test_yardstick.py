"""The round-11 yardstick (tests/oracle/yardstick.py) against closed forms, and its window against bearing's."""

import json
import math

import numpy as np
import pytest
from scipy.stats import norm

from tests.oracle.yardstick import (
    EDGE_Z,
    H_RATIO,
    H_Z,
    T_GRID,
    Bank,
    StepCounts,
    clause_of,
    pass_code,
    posterior,
    share_logit,
    step_counts,
    summary,
)

SHARP = np.linspace(0.2, 2.0, 20_001)
"""A dense bank of ratios (0.00009 apart, far below the kernel's 0.012)."""


def _normalised(logp: np.ndarray) -> np.ndarray:
    p = np.exp(logp - logp.max())
    return p / p.sum()


def test_a_sharp_threshold_gives_the_blurred_log_uniform_posterior_over_the_bracket():
    # a server whose steps pass below the truth and fail above it, every time: the bank says so at every ratio.
    # The kernel blurs the threshold: at hypothesised truth t a step at load x passes with probability
    # Phi((1 - x/t) / H_RATIO) (the share of a Gaussian kernel around x/t that lies below 1) and fails with the
    # rest. The closed form is the product of those, flat in log t, on the same grid.
    bank = Bank(ratio=SHARP, score=np.where(SHARP < 1.0, 0.0, 10.0))
    loads = np.array([0.5, 0.7, 0.9, 1.1, 1.3])
    n = np.full(5, 1000)
    bad = np.array([0, 0, 0, 1000, 1000])
    assert pass_code(bad, n, 0.01).tolist() == [0.0, 0.0, 0.0, 10.0, 10.0]
    got = posterior(bank, StepCounts(loads, n, bad), 1.0, pattern=True)
    r = loads[None, :] / T_GRID[:, None]
    passed = bad == 0
    logp = np.where(passed, norm.logcdf((1.0 - r) / H_RATIO), norm.logcdf((r - 1.0) / H_RATIO)).sum(axis=1)
    want = _normalised(logp)
    # the bank is discrete (0.00009 apart): about 0.2 % of the kernel's mass at the threshold
    assert np.abs(got - want).max() < 3e-3 * want.max()
    med, lo, hi = summary(got)
    w_med, w_lo, w_hi = summary(want)
    # the grid is 0.1 % apart: the two agree to within one grid point
    assert med == pytest.approx(w_med, rel=1.1e-3)
    assert lo == pytest.approx(w_lo, rel=1.1e-3)
    assert hi == pytest.approx(w_hi, rel=1.1e-3)
    # and, unblurred, the truth is log-uniform on (0.9, 1.1]: the kernel moves each end by about 1 %
    a, b = 0.9, 1.1
    assert med == pytest.approx(math.sqrt(a * b), rel=0.004)
    assert lo == pytest.approx(a * (b / a) ** 0.025, rel=0.012)
    assert hi == pytest.approx(a * (b / a) ** 0.975, rel=0.012)


def test_the_scale_only_renames_the_grid():
    bank = Bank(ratio=SHARP, score=np.where(SHARP < 1.0, 0.0, 10.0))
    c = StepCounts(np.array([0.7, 0.9, 1.1]), np.array([300, 300, 300]), np.array([0, 0, 300]))
    scaled = StepCounts(c.loads * 3.7, c.n, c.bad)
    assert np.allclose(posterior(bank, scaled, 3.7, pattern=True), posterior(bank, c, 1.0, pattern=True))


def test_shares_are_scored_by_the_gaussian_convolution_of_the_banks_logit_curve():
    # a bank whose logit share rises linearly with the ratio, z(r) = SLOPE (r - 1): around ratio r the kernel
    # sees z ~ N(z(r), (SLOPE H_RATIO)^2), so a step reading logit z* has likelihood proportional to
    # exp(-(z(r) - z*)^2 / (2 (H_Z^2 + (SLOPE H_RATIO)^2))) (closed form of the Gaussian convolution)
    slope = 20.0
    bank = Bank(ratio=SHARP, score=slope * (SHARP - 1.0))
    loads = np.array([0.95, 1.05])
    n = np.array([400, 400])
    bad = np.array([20, 120])
    zs = share_logit(bad, n)
    got = posterior(bank, StepCounts(loads, n, bad), 1.0)
    var = H_Z**2 + (slope * H_RATIO) ** 2
    r = loads[None, :] / T_GRID[:, None]
    want = _normalised((-((slope * (r - 1.0) - zs[None, :]) ** 2) / (2 * var)).sum(axis=1))
    assert np.abs(got - want).max() < 2e-3 * want.max()


def test_a_step_with_none_or_all_bad_is_scored_by_that_alone_not_by_its_size():
    assert share_logit(np.array([0, 0, 5, 50]), np.array([5, 5_000, 5, 50])).tolist() == [-EDGE_Z, -EDGE_Z, EDGE_Z,
                                                                                            EDGE_Z]
    assert share_logit(np.array([1]), np.array([3]))[0] == pytest.approx(math.log(1.5 / 2.5))
    ratio = np.linspace(0.5, 1.5, 10_001)
    # a bank whose zero steps are small below ratio 0.8 and large above it: as logits -log(2n + 1) their size
    # would place a zero step; as a category it does not
    score = np.where(ratio < 1.0, share_logit(np.zeros(ratio.size), np.where(ratio < 0.8, 10, 1_000)), 0.0)
    bank = Bank(ratio=ratio, score=score)
    small = StepCounts(np.array([0.9]), np.array([10]), np.array([0]))
    large = StepCounts(np.array([0.9]), np.array([1_000]), np.array([0]))
    assert np.allclose(posterior(bank, small, 1.0), posterior(bank, large, 1.0))


def test_a_step_outside_the_bank_carries_no_information():
    ratio = np.linspace(0.8, 1.2, 4001)
    bank = Bank(ratio=ratio, score=np.where(ratio < 1.0, 0.0, 10.0))
    base = StepCounts(np.array([0.9, 1.1]), np.array([500, 500]), np.array([0, 500]))
    far = StepCounts(np.array([0.1, 0.9, 1.1]), np.array([500, 500, 500]), np.array([0, 0, 500]))
    assert np.allclose(posterior(bank, base, 1.0, pattern=True), posterior(bank, far, 1.0, pattern=True))


def test_a_step_partly_outside_the_bank_is_imputed_by_its_mean_inside():
    # bank ratios 0.8-1.2; a passing step at 0.85 has ratio 0.85 / t, inside the bank for t in about
    # (0.70, 1.06) and below it for larger t. Inside, its likelihood is Phi((1 - r) / H_RATIO); outside, the
    # mean of those inside (the documented imputation). "Inside" is where the kernel weights sum to more than 3.
    ratio = np.linspace(0.8, 1.2, 4001)
    bank = Bank(ratio=ratio, score=np.where(ratio < 1.0, 0.0, 10.0))
    got = posterior(bank, StepCounts(np.array([0.85]), np.array([500]), np.array([0])), 1.0, pattern=True)
    r = 0.85 / T_GRID
    inside = np.exp(-0.5 * ((ratio[None, :] - r[:, None]) / H_RATIO) ** 2).sum(axis=1) > 3.0
    assert inside.any() and not inside.all()
    # (at the bank's edges the kernel is one-sided, but there every neighbour passes, or every one fails,
    # as Phi says: the edges lie 17 kernel widths from the threshold)
    lik = norm.cdf((1.0 - r) / H_RATIO)
    want = np.where(inside, lik, lik[inside].mean())
    want = want / want.sum()
    assert np.abs(got - want).max() < 3e-3 * want.max()
    # the part outside is flat: one value
    assert np.ptp(got[~inside]) < 1e-12


def test_clause_of_reads_the_oracle_slas():
    assert clause_of("p99(ttft) <= 3s") == ("ttft", 3.0, pytest.approx(0.01))
    assert clause_of("p99(latency) <= 14s") == ("latency", 14.0, pytest.approx(0.01))
    with pytest.raises(ValueError, match="error_rate"):
        clause_of("error_rate <= 1%")


def test_step_counts_at_low_load_are_the_window_share_of_poisson_arrivals():
    # small/chat at 2 rps for 10 x 120 s: far below its limit (11.9 rps) none is slow, and each window keeps the
    # middle 80 % of the step (two mean latencies, about 5 s, trim less than 10 % of the step, 12 s):
    # 2 * 96 = 192 expected, Poisson sd 13.9; over 10 steps the mean is within 4 sd / sqrt(10) of 192
    c = step_counts("small", "chat", [2.0] * 10, seed=11, step_s=120.0)
    assert c.bad.sum() == 0
    assert abs(c.n.mean() - 192.0) < 4 * math.sqrt(192.0) / math.sqrt(10)


def test_step_counts_match_bearings_steady_window_on_one_acceptance_seed():
    # the yardstick re-implements the window (it shares no code with bearing); here bearing's own
    # step_windows + steady_requests + the clause's request_bad count the same test
    import polars as pl

    from bearing_lib.limits.curves import steady_requests, step_windows
    from bearing_lib.limits.sla import parse_clause
    from tests.oracle.acceptance import SEED_BASE, STEP_S, TRUTH_PATH, _trace, rates_for
    from tests.oracle.configs import MIXES, SERVERS, SLAS
    from tests.oracle.simulator import stepped_run

    truth = json.loads(TRUTH_PATH.read_text())["combinations"]["small/rag"]["q_ult_rps"]
    rates = rates_for(truth, 0)
    mine = step_counts("small", "rag", rates, SEED_BASE, STEP_S)
    trace = _trace(stepped_run(SERVERS["small"], MIXES["rag"], rates, STEP_S, seed=SEED_BASE, run_id="s0"), "s0")
    clause = parse_clause(SLAS[("small", "rag")][0])
    theirs = (
        steady_requests(trace, step_windows(trace))
        .group_by("step")
        .agg(pl.len().alias("n"), clause.request_bad().sum().alias("bad"))
        .sort("step")
        .collect()
    )
    assert theirs["step"].to_list() == list(range(len(rates)))
    assert mine.n.tolist() == theirs["n"].to_list()
    assert mine.bad.tolist() == theirs["bad"].to_list()
    # and the test crosses its limit: the top steps are mostly slow, the bottom ones not at all
    assert mine.bad[0] == 0 and mine.bad[-1] > 0.5 * mine.n[-1]
