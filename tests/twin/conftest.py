"""Shared inputs of the twin's tests: oracle stepped tests (the oracle stays in tests/oracle)."""

from __future__ import annotations

import functools

import numpy as np
import polars as pl


@functools.cache
def oracle_trace(server: str, mix: str, seed: int = 0):
    """One stepped test of the acceptance design (tests/oracle/acceptance.py) as a RequestTrace."""
    from bearing_lib.data.provenance import Provenance
    from bearing_lib.data.trace import RequestTrace, conform, validate
    from tests.oracle.acceptance import SEED_BASE, STEP_S, load_truth, rates_for
    from tests.oracle.configs import MIXES, SERVERS
    from tests.oracle.simulator import stepped_run

    truth = float(load_truth()[f"{server}/{mix}"]["q_ult_rps"])
    df = stepped_run(SERVERS[server], MIXES[mix], rates_for(truth, seed), STEP_S, seed=SEED_BASE + seed,
                     run_id=f"s{seed}")
    prov = Provenance(source=f"SIMULATED oracle {server}/{mix} seed {seed}", format="oracle",
                      tool="tests.oracle.simulator", sha256="0" * 64, time_origin="relative")
    return RequestTrace(frame=validate(conform(df), prov), provenance=prov)


def mm1_trace(mu_rps: float, rates: list[float], step_s: float, seed: int, noise_ms: float = 3.0):
    """A one-slot FIFO server (Lindley recursion, written here): service ≈ Exp(μ) through geometric output lengths.

    Service = 2 ms prefill + (o − 1) × 10 ms decode with o − 1 ~ Geometric, mean 1 / (μ × 10 ms) − 0.2;
    client-side measurement noise N(0, noise_ms) is added to the recorded TTFT and end times.
    """
    from bearing_lib.data.provenance import Provenance
    from bearing_lib.data.trace import RequestTrace, conform, validate

    rng = np.random.default_rng(seed)
    d0, pre = 0.010, 0.002
    mean_iters = (1.0 / mu_rps - pre) / d0
    arr, step, load = [], [], []
    for i, r in enumerate(rates):
        n = rng.poisson(r * step_s)
        a = np.sort(rng.uniform(i * step_s, (i + 1) * step_s, n))
        arr.append(a)
        step.append(np.full(n, i))
        load.append(np.full(n, r))
    a = np.concatenate(arr)
    k = rng.geometric(1.0 / (mean_iters + 1.0), a.size) - 1  # iterations ≥ 0, mean = mean_iters
    o = k + 1
    first = np.empty(a.size)
    end = np.empty(a.size)
    free = -np.inf
    for i in range(a.size):
        start = max(a[i], free)
        first[i] = start + pre
        end[i] = first[i] + k[i] * d0
        free = end[i]
    jit = rng.normal(0.0, noise_ms / 1000.0, (2, a.size))
    first_m = np.maximum(first + jit[0], a + 1e-4)
    end_m = np.maximum(end + jit[1], first_m)
    df = pl.DataFrame({
        "request_id": [f"r{i}" for i in range(a.size)], "start_s": a, "end_s": end_m,
        "ttft_ms": (first_m - a) * 1000.0, "latency_ms": (end_m - a) * 1000.0,
        "input_tokens": np.full(a.size, 100), "output_tokens": o, "cached_tokens": np.zeros(a.size, dtype=np.int64),
        "status": ["ok"] * a.size, "run_id": "mm1", "step": np.concatenate(step),
        "offered_load": np.concatenate(load), "offered_load_unit": "rps",
    })
    prov = Provenance(source="SIMULATED M/M/1-like", format="test", tool="tests.twin.conftest", sha256="0" * 64,
                      time_origin="relative")
    return RequestTrace(frame=validate(conform(df), prov), provenance=prov)
