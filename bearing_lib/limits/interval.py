"""The interval of a limit from its replicates: equal-tailed, and the pooled estimator's widening to the step grid.

The model's interval is its posterior's (``limits.model``); the pooled and step-wise estimators take the
equal-tailed interval of their block-bootstrap replicates (``limits.bootstrap``) and widen it to the step grid
around the limit (:func:`widen_to_grid`): a step near the limit passes or fails partly by chance, which
resampling within steps cannot see (docs/oracle.md). ``q_ult.interval_method`` says which.
"""

from __future__ import annotations

import math

import numpy as np

from bearing_lib.common.quantiles import quantile
from bearing_lib.limits.evidence import POOL_STEP_OFFSET
from bearing_lib.limits.judging import JudgedStep

BIG = 1e300


def equal_tailed(draws: np.ndarray, level: float) -> list[float | None]:
    """Equal-tailed interval of draws of a limit (an infinite end is not bounded: None)."""
    r = draws[~np.isnan(draws)]
    if r.size == 0:
        return [None, None]
    a = (1 - level) / 2
    lo, hi = (float(v) for v in quantile(np.clip(r, -BIG, BIG), [a, 1 - a]))
    return [None if abs(lo) >= BIG / 10 else lo, None if abs(hi) >= BIG / 10 else hi]


def widen_to_grid(ci: list[float | None], det: list[JudgedStep], last_pass: float | None,
                  first_fail: float | None, floor: float | None, use_pool: bool, est: float,
                  grid: np.ndarray, n_boot: int) -> str | None:
    """Widen a bootstrap CI (in place) to the step grid around the limit; the interval's method, or None."""
    interval = None
    if ci[0] is not None or ci[1] is not None:
        # A step's verdict within a few % of the limit is close to a coin flip (queue episodes
        # outlast a step; docs/oracle.md), which resampling within steps cannot see: the CI
        # always spans the step grid around the limit, [one judged step below the last clean
        # pass, first fail].
        grid_lo, grid_hi = floor, first_fail
        if last_pass is not None and grid_lo is not None:
            # pooled runs: every run gets the single-run slack in its own grid, one judged step below
            # ITS last pass (any run's last pass may be the lucky one, and a follow-up's dense grid must
            # not shrink the slack the first test needs): the CI holds every run's own grid interval
            for b in {int(j.row.step) // POOL_STEP_OFFSET for j in det}:
                run_det = [j for j in det if int(j.row.step) // POOL_STEP_OFFSET == b]
                # ... and up to ITS first fail: a follow-up step just below the limit fails by bad luck
                # as often as one just above passes by good luck
                ff_b = min((j.x for j in run_det if j.status == "fail"), default=None)
                if ff_b is not None and grid_hi is not None:
                    grid_hi = max(grid_hi, ff_b)
                lp_b = max((j.x for j in run_det if j.status == "pass"
                            and (first_fail is None or j.x < first_fail)), default=None)
                if lp_b is None:
                    continue
                below_b = [j.x for j in run_det if j.x < lp_b]
                grid_lo = min(grid_lo, max(below_b) if below_b else lp_b)
        if use_pool and last_pass is None and math.isfinite(est) and grid.size:
            # no supported pass: the grid cell of the pooled crossing, one step of slack below
            under = grid[grid <= est]
            grid_lo = float(under[-2]) if under.size >= 2 else float(grid[0])
            over = grid[grid > est]
            grid_hi = first_fail if first_fail is not None else (float(over[0]) if over.size else None)
        widened = []
        if ci[0] is not None and grid_lo is not None and grid_lo < ci[0]:
            ci[0] = grid_lo
            widened.append(f"low end to the step below the last pass ({grid_lo:.4g}"
                           + ("; the lowest over the pooled runs' own grids)"
                              if len({int(j.row.step) // POOL_STEP_OFFSET for j in det}) > 1 else ")"))
        if ci[1] is not None and grid_hi is not None and grid_hi > ci[1]:
            ci[1] = grid_hi
            several = len({int(j.row.step) // POOL_STEP_OFFSET for j in det}) > 1
            widened.append(f"high end to the first failing step ({grid_hi:.4g}"
                           + ("; of the run whose first fail is highest)" if several else ")"))
        interval = (f"percentile block bootstrap ({n_boot} resamples) of the "
                    f"{'pooled' if use_pool else 'step-wise'} crossing")
        if widened:
            interval += ("; widened to the step grid (" + ", ".join(widened) + "): a step near the limit "
                         "passes or fails partly by chance, which resampling within steps cannot see")
    return interval


__all__ = ["BIG", "equal_tailed", "widen_to_grid"]
