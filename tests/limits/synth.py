"""SYNTHETIC stepped load tests with known truth (test and benchmark helper, not library code).

``mm1_trace`` simulates a FIFO single-server queue with Poisson arrivals and exponential
service (M/M/1) by the Lindley recursion: request latency = wait + service. In steady
state the sojourn time is Exponential(mu - lambda), so P_q = -ln(1 - q) / (mu - lambda)
and the highest rate meeting ``p_q(latency) <= L`` is ``mu + ln(1 - q) / L``.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from bearing_lib.data.provenance import Provenance
from bearing_lib.data.trace import RequestTrace, conform, validate

MIXES = {  # name: (input median tokens, output median tokens, cache-hit ratio, service-time factor)
    "chat": (300, 150, 0.0, 1.0),
    "rag": (6000, 300, 0.0, 2.0),
    "cached": (2000, 100, 0.8, 0.6),
}


def make_trace(
    frame: pl.DataFrame, *, time_origin: str = "relative", steps: pl.DataFrame | None = None
) -> RequestTrace:
    """Wrap a synthetic frame as a validated RequestTrace (provenance says SYNTHETIC)."""
    prov = Provenance(source="SYNTHETIC", format="synthetic", tool="tests.limits.synth", sha256="0" * 64,
                      time_origin=time_origin)  # type: ignore[arg-type]
    df = validate(conform(frame), prov)
    return RequestTrace(frame=df, provenance=prov, steps=steps)


def mm1_frame(
    rates_rps: list[float],
    *,
    mu_rps: float,
    step_s: float,
    seed: int = 0,
    run_id: str = "run",
    mix_weights: dict[str, float] | None = None,
    error_prob: float = 0.0,
    gap_s: float = 0.0,
) -> pl.DataFrame:
    """Arrivals of each step at its rate for ``step_s`` seconds, served FIFO by one server.

    With ``mix_weights`` each request draws a mix from :data:`MIXES`; its service time is
    Exp(mu) times the mix factor normalised so the mean service time stays 1/mu.
    The queue carries over from step to step (as in a real stepped test).
    """
    rng = np.random.default_rng(seed)
    starts, steps_, loads = [], [], []
    t = 0.0
    for k, lam in enumerate(rates_rps):
        n = rng.poisson(lam * step_s)
        a = np.sort(rng.uniform(t, t + step_s, n))
        starts.append(a)
        steps_.append(np.full(n, k))
        loads.append(np.full(n, lam))
        t += step_s + gap_s
    a = np.concatenate(starts)
    n = a.size
    names = list(mix_weights) if mix_weights else ["chat"]
    w = np.array([mix_weights[m] for m in names]) if mix_weights else np.array([1.0])
    w = w / w.sum()
    mix_idx = rng.choice(len(names), size=n, p=w)
    factor = np.array([MIXES[m][3] for m in names])
    factor = factor / (w * factor).sum()
    s = rng.exponential(1.0 / mu_rps, n) * factor[mix_idx]
    lat = _lindley(a, s)
    inp = np.array([MIXES[m][0] for m in names])[mix_idx] * rng.lognormal(0, 0.3, n)
    out = np.array([MIXES[m][1] for m in names])[mix_idx] * rng.lognormal(0, 0.3, n)
    cache = np.array([MIXES[m][2] for m in names])[mix_idx]
    inp_i = np.maximum(1, inp.astype(np.int64))
    out_i = np.maximum(2, out.astype(np.int64))
    status = np.where(rng.uniform(size=n) < error_prob, "error", "ok")
    lat_ms = lat * 1000.0
    return pl.DataFrame({
        "request_id": [str(i) for i in range(n)],
        "start_s": a,
        "end_s": a + lat,
        "latency_ms": lat_ms,
        "ttft_ms": lat_ms * 0.2,
        "tpot_ms": lat_ms * 0.8 / (out_i - 1),
        "input_tokens": inp_i,
        "output_tokens": out_i,
        "cached_tokens": (inp_i * cache).astype(np.int64),
        "status": status,
        "run_id": run_id,
        "step": np.concatenate(steps_).astype(np.int64),
        "offered_load": np.concatenate(loads),
        "offered_load_unit": "rps",
    })


def _lindley(a: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Sojourn times of a FIFO single server (vectorised Lindley recursion via cumulative max)."""
    # departure D_i = max(A_i, D_{i-1}) + S_i  =>  D_i = max_j<=i (A_j + sum_{j..i} S) ; use prefix sums
    cs = np.cumsum(s)
    prev = np.concatenate(([0.0], cs[:-1]))
    d = np.maximum.accumulate(a - prev) + cs
    return d - a


def mm1_limit(mu_rps: float, q: float, latency_ms: float) -> float:
    """Highest arrival rate with steady-state sojourn q-quantile <= latency_ms."""
    return mu_rps + np.log(1.0 - q) / (latency_ms / 1000.0)
