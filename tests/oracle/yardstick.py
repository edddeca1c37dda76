"""TEST ORACLE diagnostic: the known-shape yardstick for the width of a limit's interval (issue 23, round 11).

How narrow can an honest 95 % interval of the limit be, from one stepped test's per-step counts? This module
answers it for an estimator that knows more than any real one: how a step's bad share is distributed at every
load-to-truth ratio of this server and mix (the shape of the transition, its luck and its bistability), learnt
from a bank of simulated tests, but not the truth's scale. Its Bayes interval is what the evidence supports once
the shape is known; the difference to bearing's interval is what not knowing the shape costs.

* **Evidence**: per step, the requests sent in the middle of the step (each side trimmed by 10 % of the step or
  two mean request latencies, at most 25 %, as ``bearing_lib.limits.curves`` does; re-implemented here, so the
  yardstick shares no code with bearing) and how many of them broke the clause (failed, or the clause's metric
  above its threshold).
* **Bank**: ``n_bank`` tests of the acceptance design (``acceptance.rates_for``'s ten loads from 0.4× to 1.6× of
  the truth, shifted by a uniform draw within a step's spacing), with seeds disjoint from the judged ones.
* **Likelihood**: steps are taken as independent given the truth. A step's bad share at hypothesised ratio
  ``r`` is scored by a kernel estimate of its density among the bank's steps near ``r`` (Gaussian kernels:
  ``H_RATIO`` in the ratio, ``H_Z`` in the empirical logit of the share; a step with none or all of its requests
  bad is a category of its own, ``share_logit``). With ``pattern=True`` only whether a step passed (bad share ≤
  the allowance) is scored: what a grid-based interval reads.
* **Prior and interval**: flat in log truth (the scale-invariant prior: nothing known of the scale), equal-tailed
  on a log grid from 0.7× to 1.4×. The loads' own spacing, which in this design would give the truth away
  (0.133 × truth), is not used. Steps taken as independent and the kernel estimates make the level approximate:
  the coverage is measured (``main`` prints it), not assumed.

``python -m tests.oracle.yardstick small rag [--bank 400] [--extra 100] [--step-s 120] [--pattern]`` prints, for
the acceptance's 20 seeds and ``extra`` fresh ones, how many 95 % intervals cover the truth, their median
half-width (relative to the posterior median) and how many medians lie within ±10 % of the truth.
"""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import dataclass

import numpy as np

from tests.oracle.acceptance import HIGH, LOW, N_STEPS, SEED_BASE, TRUTH_PATH, rates_for
from tests.oracle.configs import MIXES, SERVERS, SLAS
from tests.oracle.simulator import poisson_arrivals, simulate

H_RATIO = 0.012
"""Kernel bandwidth in load / truth (the acceptance's steps are 0.133 apart)."""
H_Z = 0.35
"""Kernel bandwidth in the logit of a step's bad share (``share_logit``)."""
T_GRID = np.exp(np.linspace(np.log(0.7), np.log(1.4), 701))
"""Hypothesised truth / actual truth."""
BANK_SEED = 900_000
FRESH_SEED = 950_000
SPACING = (HIGH - LOW) / (N_STEPS - 1)


@dataclass(frozen=True)
class StepCounts:
    """One stepped test: each step's offered load, requests in its steady window and bad ones among them."""

    loads: np.ndarray
    n: np.ndarray
    bad: np.ndarray


def clause_of(sla: str) -> tuple[str, float, float]:
    """``p99(ttft) <= 3s`` → ("ttft", 3.0, 0.01): the metric, its threshold in seconds and the allowed bad share."""
    m = re.fullmatch(r"p(\d+(?:\.\d+)?)\((ttft|latency)\) <= (\d+(?:\.\d+)?)s", sla.strip())
    if m is None:
        raise ValueError(f"the yardstick reads 'pNN(ttft|latency) <= Ns' clauses only, got {sla!r}")
    return m.group(2), float(m.group(3)), 1.0 - float(m.group(1)) / 100.0


def step_counts(server: str, mix: str, rates: list[float], seed: int, step_s: float) -> StepCounts:
    """Simulate one stepped test (as ``simulator.stepped_run`` draws it) and count each step's steady window."""
    metric, thr, _ = clause_of(SLAS[(server, mix)][0])
    rng = np.random.default_rng(seed)
    times, steps = [], []
    for i, r in enumerate(rates):
        a = poisson_arrivals(rng, r, i * step_s, (i + 1) * step_s)
        times.append(a)
        steps.append(np.full(a.size, i))
    arr = np.concatenate(times)
    st = np.concatenate(steps)
    inp, out, cached = MIXES[mix].draw(rng, arr.size)
    res = simulate(SERVERS[server], arr, inp, out, cached)
    ok = res["status_code"] == 0
    val = (res["first_token_s"] if metric == "ttft" else res["end_s"]) - arr
    with np.errstate(invalid="ignore"):
        bad = ~ok | (val > thr)
    lat = res["end_s"] - arr
    n = np.zeros(len(rates), dtype=np.int64)
    b = np.zeros(len(rates), dtype=np.int64)
    for k in range(len(rates)):
        m = st == k
        if not m.any():
            continue
        t0, t1 = float(arr[m].min()), float(arr[m].max())
        d = t1 - t0
        trim = min(max(0.1 * d, 2.0 * float(np.mean(lat[m]))), 0.25 * d)
        w = m & (arr >= t0 + trim) & (arr <= t1 - trim)
        n[k] = int(w.sum())
        b[k] = int(bad[w].sum())
    return StepCounts(np.asarray(rates, dtype=float), n, b)


EDGE_Z = 12.0
"""The score of a step with no bad request (``−EDGE_Z``) or with every request bad (``+EDGE_Z``): fixed categories,
far from any empirical logit with 0 < k < n (at most ``log((2n − 1) / 3)`` in size, 7.2 for n = 2,000), so that how
many requests a zero or all-bad step held does not score it."""


def share_logit(bad: np.ndarray, n: np.ndarray) -> np.ndarray:
    """The empirical logit of a bad share, ``log((k + ½) / (n − k + ½))``, for 0 < k < n; ∓``EDGE_Z`` at k = 0 / n.

    Scored as logits, ``k = 0`` would read ``−log(2n + 1)``: the step's size, which grows with its load, would
    then tell the likelihood the load's scale. As fixed categories they say only "none" and "all".
    """
    bad = np.asarray(bad, dtype=float)
    n = np.asarray(n, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.log((bad + 0.5) / (n - bad + 0.5))
    return np.where(bad <= 0, -EDGE_Z, np.where(bad >= n, EDGE_Z, z))


def pass_code(bad: np.ndarray, n: np.ndarray, allowed: float) -> np.ndarray:
    """0 where the step passed (bad share ≤ the allowance), 10 where it failed (far apart on the logit scale)."""
    return np.where(bad <= allowed * n, 0.0, 10.0)


@dataclass(frozen=True)
class Bank:
    """The bank's steps: load / truth and the scored share."""

    ratio: np.ndarray
    score: np.ndarray


def make_bank(server: str, mix: str, truth: float, n_tests: int, step_s: float, *, pattern: bool = False,
              allowed: float = 0.01) -> Bank:
    """Steps of ``n_tests`` acceptance-design tests at random shifts (seeds ``BANK_SEED + i``)."""
    rng = np.random.default_rng(BANK_SEED - 1)
    ratio, score = [], []
    for i in range(n_tests):
        u = rng.uniform(-SPACING / 2, SPACING / 2)
        c = step_counts(server, mix, [truth * (m + u) for m in np.linspace(LOW, HIGH, N_STEPS)],
                        BANK_SEED + i, step_s)
        keep = c.n > 0
        ratio.append(c.loads[keep] / truth)
        score.append(pass_code(c.bad[keep], c.n[keep], allowed) if pattern else share_logit(c.bad[keep], c.n[keep]))
    return Bank(np.concatenate(ratio), np.concatenate(score))


def posterior(bank: Bank, counts: StepCounts, scale: float, *, pattern: bool = False, allowed: float = 0.01,
              t_grid: np.ndarray = T_GRID) -> np.ndarray:
    """The posterior over ``t_grid`` (hypothesised truth = ``scale`` × t), flat in log t, steps independent.

    Where a step's hypothesised ratio lies outside the bank (kernel weights summing to three or less), its
    likelihood is imputed by its mean over the grid points where the ratio lies inside: a step wholly outside
    the bank is flat (carries no information); one partly outside is flat at that mean on the outside part, an
    imputation, not a flat prior over the whole grid.
    """
    logp = np.zeros(t_grid.size)
    for x, n, b in zip(counts.loads, counts.n, counts.bad, strict=True):
        if n <= 0:
            continue
        s = float(pass_code(np.asarray(b), np.asarray(n), allowed) if pattern else share_logit(np.asarray(b), n))
        r = x / (scale * t_grid)
        w = np.exp(-0.5 * ((bank.ratio[None, :] - r[:, None]) / H_RATIO) ** 2)
        sw = w.sum(axis=1)
        kz = np.exp(-0.5 * ((bank.score - s) / H_Z) ** 2)
        with np.errstate(invalid="ignore", divide="ignore"):
            lik = np.where(sw > 3.0, (w * kz[None, :]).sum(axis=1) / sw, np.nan)
        fill = float(np.nanmean(lik)) if np.isfinite(lik).any() else 1.0
        lik = np.where(np.isfinite(lik), lik, fill)
        logp += np.log(np.maximum(lik, 1e-300))
    p = np.exp(logp - logp.max())
    return p / p.sum()


def summary(p: np.ndarray, level: float = 0.95, t_grid: np.ndarray = T_GRID) -> tuple[float, float, float]:
    """(median, low, high) of a posterior on ``t_grid``: the equal-tailed interval at ``level``."""
    c = np.cumsum(p)
    q = [0.5, (1 - level) / 2, 1 - (1 - level) / 2]
    i = np.minimum(np.searchsorted(c, q), t_grid.size - 1)
    return float(t_grid[i[0]]), float(t_grid[i[1]]), float(t_grid[i[2]])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m tests.oracle.yardstick", description=__doc__.splitlines()[0])
    ap.add_argument("server")
    ap.add_argument("mix")
    ap.add_argument("--bank", type=int, default=400)
    ap.add_argument("--extra", type=int, default=100)
    ap.add_argument("--step-s", type=float, default=120.0)
    ap.add_argument("--pattern", action="store_true", help="score only whether each step passed")
    a = ap.parse_args(argv)
    truth = json.loads(TRUTH_PATH.read_text())["combinations"][f"{a.server}/{a.mix}"]["q_ult_rps"]
    allowed = clause_of(SLAS[(a.server, a.mix)][0])[2]
    bank = make_bank(a.server, a.mix, truth, a.bank, a.step_s, pattern=a.pattern, allowed=allowed)
    fresh = np.random.default_rng(FRESH_SEED - 1)
    groups: dict[str, list[tuple[float, float, float]]] = {"acceptance seeds 0-19": [], f"{a.extra} fresh": []}
    for s in range(20):
        c = step_counts(a.server, a.mix, rates_for(truth, s), SEED_BASE + s, a.step_s)
        groups["acceptance seeds 0-19"].append(summary(posterior(bank, c, truth, pattern=a.pattern, allowed=allowed)))
    for j in range(a.extra):
        u = fresh.uniform(-SPACING / 2, SPACING / 2)
        c = step_counts(a.server, a.mix, [truth * (m + u) for m in np.linspace(LOW, HIGH, N_STEPS)],
                        FRESH_SEED + j, a.step_s)
        groups[f"{a.extra} fresh"].append(summary(posterior(bank, c, truth, pattern=a.pattern, allowed=allowed)))
    tag = "pattern only" if a.pattern else "shares"
    for name, rows in groups.items():
        if not rows:
            continue
        cov = sum(lo <= 1.0 <= hi for _, lo, hi in rows)
        within = sum(abs(med - 1.0) <= 0.10 for med, _, _ in rows)
        hw = float(np.median([(hi - lo) / 2 / med for med, lo, hi in rows]))
        print(f"{a.server}/{a.mix} {a.step_s:g}s {tag}, {name}: covered {cov}/{len(rows)}, "
              f"median half-width {hw:.1%}, within ±10 % {within}/{len(rows)}", flush=True)


if __name__ == "__main__":
    main()
