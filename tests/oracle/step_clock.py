"""TEST ORACLE diagnostic (issue 23, round 10): each step's measured relaxation clock beside its slow share.

For one oracle combination, seed and step length, runs the stepped test of the acceptance design
(``acceptance.rates_for``) and prints per step: the load over the truth, the requests, the share slower than the
clause's threshold (all of the step, and per tenth of the step in send order), the step's mean in-flight count
and the integrated autocorrelation time ``τ`` of that count (sampled each second from the requests' send and
finish times), with ``T / τ``, how many times the queue relaxes within the step. docs/oracle.md ("round 10")
quotes its output. Run from the repository root::

    PYTHONPATH=. python -m tests.oracle.step_clock small rag 2 --step-s 1200
"""

from __future__ import annotations

import argparse

import numpy as np
import polars as pl
from statsmodels.tsa.stattools import acf

from tests.oracle.acceptance import SEED_BASE, load_truth, rates_for
from tests.oracle.configs import MIXES, SERVERS
from tests.oracle.simulator import stepped_run

SOKAL_C = 5.0
"""Sokal's automatic window: the autocorrelation is summed up to the first lag ``M ≥ c · τ(M)``."""


def integrated_time(x: np.ndarray) -> float:
    """The integrated autocorrelation time ``τ = 1 + 2 Σ ρ(k)`` of a series, in samples, summed over Sokal's
    automatic window (``statsmodels``' FFT autocorrelation); NaN for a constant or too short series. An AR(1)
    series with coefficient ``φ`` has ``τ = (1 + φ) / (1 − φ)``."""
    x = np.asarray(x, float)
    if x.size < 8 or not np.var(x) > 0:
        return float("nan")
    rho = acf(x, nlags=x.size - 1, fft=True)
    csum = 1.0 + 2.0 * np.cumsum(rho[1:])
    lags = np.arange(1, x.size)
    # the window always closes: the biased autocorrelations sum to -1/2, so the last partial sum is 0. A series
    # shorter than ~50 tau gives a rough (low) estimate: docs/oracle.md quotes T / tau beside every tau
    stop = np.nonzero(lags >= SOKAL_C * csum)[0]
    return float(csum[stop[0]])


def inflight(start_s: np.ndarray, end_s: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Requests in flight (sent, not finished) at each time of ``grid``."""
    return (np.searchsorted(np.sort(start_s), grid, side="right")
            - np.searchsorted(np.sort(end_s), grid, side="right")).astype(float)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("server")
    ap.add_argument("mix")
    ap.add_argument("seed", type=int)
    ap.add_argument("--step-s", type=float, default=1200.0)
    ap.add_argument("--metric", default="ttft_ms")
    ap.add_argument("--threshold-ms", type=float, default=3000.0)
    a = ap.parse_args(argv)
    truth = float(load_truth()[f"{a.server}/{a.mix}"]["q_ult_rps"])
    rates = rates_for(truth, a.seed)
    df = stepped_run(SERVERS[a.server], MIXES[a.mix], rates, a.step_s, seed=SEED_BASE + a.seed, run_id=f"s{a.seed}")
    print(f"{a.server}/{a.mix} seed {a.seed}, steps of {a.step_s:g} s, {a.metric} > {a.threshold_ms:g} ms "
          f"(truth {truth:g} rps)")
    for i, r in enumerate(rates):
        s = df.filter(pl.col("step") == i).sort("start_s")
        st, en = s["start_s"].to_numpy(), s["end_s"].to_numpy()
        grid = np.arange(st.min(), st.max(), 1.0)
        tau = integrated_time(inflight(st, en, grid))
        slow = s[a.metric].fill_nan(None).fill_null(float("inf")).to_numpy() > a.threshold_ms
        tenths = " ".join(f"{p.mean():.3f}" for p in np.array_split(slow, 10))
        busy = inflight(st, en, grid).mean()
        print(f"x/truth {r / truth:.3f}  n {s.height:6d}  slow {slow.mean():.4f}  in flight {busy:6.1f}"
              f"  tau {tau:6.1f} s  T/tau {grid.size / tau:5.0f}  tenths {tenths}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
