"""Benchmark (not a test): per-minute counts and the full traffic profile on a synthetic trace.

SYNTHETIC data: ``--rows`` requests (default 10 M) over 7 days with a diurnal rate, ms
timestamps, lognormal token counts, fixed seed. Prints wall seconds (median of
``--repeat`` runs after one warm-up) for ``per_minute_counts``, ``timestamp_resolution``
and ``profile_traffic`` (the last once, with 200 bootstrap resamples).

    nice python bench/bench_profile.py --rows 10000000
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import polars as pl

from bearing_lib.data.provenance import Provenance
from bearing_lib.data.trace import RequestTrace, conform
from bearing_lib.traffic.binning import per_minute_counts, timestamp_resolution
from bearing_lib.traffic.profile import profile_traffic


def synthetic_trace(rows: int, seed: int = 20261129) -> RequestTrace:
    rng = np.random.default_rng(seed)
    t0 = 1_704_067_200.0
    span = 7 * 86_400.0
    # diurnal arrival density: inverse-CDF sampling, piecewise linear over 1-minute steps
    grid = np.arange(0, span, 60.0)
    dens = 1.0 + 0.6 * np.sin(2 * np.pi * (grid / 86_400.0 - 0.25))
    cdf = np.cumsum(dens) / dens.sum()
    u = np.sort(rng.random(rows))
    start = t0 + np.interp(u, np.concatenate([[0.0], cdf]), np.concatenate([[0.0], grid + 60.0]))
    start = np.round(start, 3)
    frame = pl.DataFrame(
        {
            "start_s": start,
            "input_tokens": rng.lognormal(6.5, 1.0, rows).astype(np.int64),
            "output_tokens": rng.lognormal(5.2, 0.8, rows).astype(np.int64),
        }
    )
    prov = Provenance(source="synthetic", format="synthetic", tool="bench", sha256="")
    return RequestTrace(conform(frame), prov)


def _time(fn, repeat: int) -> float:
    fn()
    runs = []
    for _ in range(repeat):
        a = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - a)
    return statistics.median(runs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    a = time.perf_counter()
    tr = synthetic_trace(args.rows)
    print(f"built {args.rows:,} rows in {time.perf_counter() - a:.2f} s")
    print(f"per_minute_counts:    {_time(lambda: per_minute_counts(tr), args.repeat):.3f} s (median)")
    print(f"timestamp_resolution: {_time(lambda: timestamp_resolution(tr), args.repeat):.3f} s (median)")
    a = time.perf_counter()
    import statsmodels.tsa.seasonal  # noqa: F401  (a one-off cost per process, paid by the MSTL step)

    print(f"statsmodels import:   {time.perf_counter() - a:.3f} s (once per process)")
    a = time.perf_counter()
    prof = profile_traffic(tr, n_boot=200)
    print(f"profile_traffic:      {time.perf_counter() - a:.3f} s (one run after the import, 200 resamples)")
    print("\n".join(prof.summary_lines()[3:8]))


if __name__ == "__main__":
    main()
