"""Both estimators of a request trace on a single-server M/M/1 queue (mu = 10/s) against its closed-form truth
(``synth.mm1_limit``: ``mu + ln(1 - q) / L``; issue 23, docs/oracle.md "round 17").

Usage: ``PYTHONPATH=. python tests/limits/mm1_estimators.py [SEEDS] [DESIGN-PREFIX]`` (8 seeds, 100-107, and every
design by default; about 3 minutes). One line per design and estimator: within +-10 % and covered of the seeds,
median and worst error, median half-width of the 95 % interval, intervals open below.
"""

from __future__ import annotations

import sys

import numpy as np

from bearing_lib.limits.fit import fit_limits
from tests.limits.synth import make_trace, mm1_frame, mm1_limit

DESIGNS = [
    ("p99<=1s, 8x120s, 2-9 rps", "p99(latency) <= 1s", mm1_limit(10, .99, 1000), [2, 3, 4, 5, 6, 7, 8, 9], 120.0),
    ("p95<=1s, 8x300s, 2-9 rps", "p95(latency) <= 1s", mm1_limit(10, .95, 1000), [2, 3, 4, 5, 6, 7, 8, 9], 300.0),
    ("goodput(latency<=1s)>=95%, 8x300s", "goodput(latency <= 1s) >= 95%", mm1_limit(10, .95, 1000),
     [2, 3, 4, 5, 6, 7, 8, 9], 300.0),
    ("p90<=800ms, 10x120s, 4-9.4 rps", "p90(latency) <= 800ms", mm1_limit(10, .90, 800),
     [4, 4.6, 5.2, 5.8, 6.4, 7, 7.6, 8.2, 8.8, 9.4], 120.0),
    ("p50<=500ms, 10x400s, 4-10.5", "p50(latency) <= 500ms", mm1_limit(10, .5, 500),
     [4.0, 5.0, 6.0, 7.0, 7.5, 8.0, 8.5, 9.0, 9.5, 10.5], 400.0),
]


def main() -> None:
    seeds = range(int(sys.argv[1]) if len(sys.argv) > 1 else 8)
    designs = [d for d in DESIGNS if len(sys.argv) < 3 or d[0].startswith(sys.argv[2])]
    for name, sla, truth, rates, step in designs:
        for est in ("pooled", "model"):
            errs, cov, within, hw, lo_open = [], 0, 0, [], 0
            for s in seeds:
                q = fit_limits(make_trace(mm1_frame(rates, mu_rps=10.0, step_s=step, seed=100 + s)), sla,
                               mixes="none", n_boot=200, estimator=est).limits[0].q_ult
                if q.value is None:
                    errs.append(float("nan"))
                    continue
                e = q.value / truth - 1
                errs.append(e)
                within += abs(e) <= 0.10
                lo, hi = q.ci95
                cov += (lo is None or lo <= truth) and (hi is None or truth <= hi)
                lo_open += lo is None
                if lo is not None and hi is not None:
                    hw.append((hi - lo) / 2 / q.value)
            worst = max(errs, key=lambda x: abs(x) if x == x else 0)
            print(f"{name} | truth {truth:.3f} | {est}: within {within}/{len(seeds)}, covered {cov}, median err "
                  f"{np.nanmedian(errs):+.1%}, worst {worst:+.1%}, median half-width "
                  f"{np.median(hw) if hw else float('nan'):.1%}, low end open {lo_open}", flush=True)


if __name__ == "__main__":
    main()
