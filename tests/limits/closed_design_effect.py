"""How much a closed loop's 120 s step strays from a binomial sample (issue 23; docs/limits.md, "Load-point tables:
coverage on a simulation", the paragraph on the design effect by load).

Usage: ``PYTHONPATH=. python tests/limits/closed_design_effect.py [USERS ...]`` (400 seeds per load; 8 12 14 16 18 20
24 28 users by default; about 5 seconds). Per load, over the seeds of :func:`tests.limits.closed_loop.simulate`
(the closed M/M/4//N loop, one step of 120 s from an empty server): the mean request count ``n``, the mean share of
requests slower than 4 s (the SLA ``p95(latency) <= 4s`` of ``tests/limits/test_table_coverage.py``), the share's
variance across seeds against the binomial ``p (1 - p) / n`` (their ratio is the step's design effect), the
beta-binomial concentration ``c = (n - 1) / (deff - 1) - 1`` that variance corresponds to, and how often the step's
linear-interpolation P95 meets 4 s (the tool's verdict). A design effect at or below 1 (2 or 4 users: 0.96-0.97,
sampling noise of the variance) prints ``c ≈ inf``: no overdispersion, not underdispersion measured.
"""

from __future__ import annotations

import sys

import numpy as np

from tests.limits import closed_loop as cl

SEEDS = 400
STEP_S = 120.0
THRESHOLD_S = 4.0


def design_effect(users: int, seeds: int = SEEDS, step_s: float = STEP_S) -> dict[str, float]:
    shares, ns, passes = [], [], []
    for seed in range(seeds):
        start, end = cl.simulate(users, step_s, np.random.default_rng(90_000 + seed))
        lat = end - start
        shares.append(float(np.mean(lat > THRESHOLD_S)))
        ns.append(lat.size)
        passes.append(float(np.quantile(lat, 0.95, method="linear")) <= THRESHOLD_S)
    share, n = float(np.mean(shares)), float(np.mean(ns))
    deff = float(np.var(shares, ddof=1)) / (share * (1 - share) / n)
    conc = (n - 1) / (deff - 1) - 1 if deff > 1 else float("inf")
    return {"users": users, "n": n, "share": share, "deff": deff, "c": conc, "p95_pass": float(np.mean(passes))}


def main() -> None:
    for users in [int(a) for a in sys.argv[1:]] or [8, 12, 14, 16, 18, 20, 24, 28]:
        d = design_effect(users)
        print(f"{users:>3} users: n {d['n']:.0f}, share > 4 s {d['share']:.4f}, design effect {d['deff']:.2f} "
              f"(c ≈ {d['c']:.0f}), P95 meets 4 s in {d['p95_pass']:.1%} of seeds", flush=True)


if __name__ == "__main__":
    main()
