"""Speed of the digital twin (a script, not a test).

Goals (docs/twin.md "Speed"):
  calibrate : a SIMULATED 100k-request stepped test (the oracle's ``large`` server, chat mix,
              10 steps) calibrated with 200 step-bootstrap resamples within 30 s on 2 cores;
  predict   : one prediction (bisection over Poisson rates to ±1 %, 12 parameter draws) within
              60 s on 2 cores.
Reference in the same run: the oracle's independent simulator (``tests/oracle/simulator.py``) on
the same arrivals, and bearing's measured-limit estimator (``fit_limits``) on the same trace.

Usage::

    PYTHONPATH=. nice python bench/bench_twin.py [--rows 100000]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=100_000)
    args = ap.parse_args()

    import numpy as np

    from bearing_lib.data.provenance import Provenance
    from bearing_lib.data.trace import RequestTrace, conform, validate
    from bearing_lib.limits.fit import fit_limits
    from bearing_lib.twin import SearchOptions, calibrate, calibration_mix, predict
    from bearing_lib.twin import validate as validate_twin
    from bearing_lib.twin.simulate import ServerParams, simulate
    from tests.oracle.configs import MIXES, SERVERS
    from tests.oracle.simulator import poisson_arrivals, stepped_run
    from tests.oracle.simulator import simulate as oracle_simulate

    cfg, mix = SERVERS["large"], MIXES["chat"]
    truth = 20.268
    rates = [truth * m for m in np.linspace(0.4, 1.6, 10)]
    step_s = args.rows / sum(rates)
    t0 = time.perf_counter()
    df = stepped_run(cfg, mix, rates, step_s, seed=1)
    t_gen = time.perf_counter() - t0
    prov = Provenance(source="SIMULATED bench", format="oracle", tool="bench", sha256="0" * 64, time_origin="relative")
    trace = RequestTrace(frame=validate(conform(df), prov), provenance=prov)
    print(f"test: {trace.frame.height:,} requests, 10 steps of {step_s:.0f} s (oracle simulator: {t_gen:.2f} s)")

    t0 = time.perf_counter()
    tw = calibrate(trace, n_boot=200)
    t_cal = time.perf_counter() - t0
    t0 = time.perf_counter()
    tw.validation = validate_twin(tw, trace, "p99(ttft) <= 1s")
    t_val = time.perf_counter() - t0
    print(f"calibrate (200 resamples): {t_cal:.2f} s   validate (replay + 2 held-out recalibrations): {t_val:.2f} s"
          f"   goal ≤ 30 s: {'met' if t_cal + t_val <= 30 else 'MISSED'}")
    t0 = time.perf_counter()
    fit_limits(trace, ["p99(ttft) <= 1s"], mixes="none", n_boot=200)
    print(f"reference: fit_limits on the same trace (200 resamples): {time.perf_counter() - t0:.2f} s")

    rng = np.random.default_rng(5)
    a = poisson_arrivals(rng, 25.0, 0.0, 3600.0)
    i, o, c = mix.draw(rng, a.size)
    p = ServerParams(cfg.prefill_base_ms, cfg.prefill_ms_per_token, cfg.decode_base_ms, cfg.decode_ms_per_seq,
                     cfg.max_num_seqs, cfg.kv_budget_tokens, cfg.max_batched_tokens, cfg.queue_timeout_s)
    t0 = time.perf_counter()
    simulate(p, a, i, o, c)
    t_tw = time.perf_counter() - t0
    t0 = time.perf_counter()
    oracle_simulate(cfg, a, i, o, c)
    t_or = time.perf_counter() - t0
    print(f"simulate 1 h at 25 rps ({a.size:,} requests): twin {t_tw:.3f} s ({t_tw / a.size * 1e6:.1f} µs/request), "
          f"reference oracle simulator {t_or:.3f} s")
    from dataclasses import replace

    pp = replace(p, kv_policy="paged", kv_budget_tokens=12_000.0, decode_ms_per_kctx=0.5)
    t0 = time.perf_counter()
    rp = simulate(pp, a, i, o, c)
    t_pg = time.perf_counter() - t0
    print(f"simulate the same, paged KV at 12k tokens + context cost ({int(rp.preemptions):,} preemptions): "
          f"twin {t_pg:.3f} s ({t_pg / a.size * 1e6:.1f} µs/request)")

    t0 = time.perf_counter()
    pred = predict(tw, calibration_mix(tw), "p99(ttft) <= 1s", options=SearchOptions(n_draws=12))
    t_pred = time.perf_counter() - t0
    print(f"predict (±1 %, 12 draws): {t_pred:.1f} s   goal ≤ 60 s: {'met' if t_pred <= 60 else 'MISSED'}   "
          f"{pred.q_ult.text()} (truth {truth})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
