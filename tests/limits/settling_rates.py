"""How often the whole-step rule (``bearing_lib.limits.settling``) calls a step unsettled, on SYNTHETIC M/M/1.

Stepped runs of one FIFO server (μ = 10 req/s, ``tests.limits.synth.mm1_frame``: the queue carries over from
step to step) at fixed fractions of the SLA's true limit, ascending. The true limit of ``pQ(latency) <= L``
is ``μ + ln(1 − Q) / L`` (the sojourn time is exponential). A step **below** the limit that the rule calls
unsettled is a false alarm; a step above it that the rule calls unsettled is a detection. The rule looks at
TTFT (the simulator's TTFT is 0.2 × latency, the same ordering).

    PYTHONPATH=. python -m tests.limits.settling_rates [--seeds 200] [--step-s 120]

prints the table quoted in docs/limits.md ("Steady state on the whole step").
"""

from __future__ import annotations

import argparse

import numpy as np

from bearing_lib.data.mixes import MixSpec
from bearing_lib.limits.settling import settling_by_step
from bearing_lib.limits.sla import parse_sla
from tests.limits.synth import make_trace, mm1_frame, mm1_limit

MU = 10.0
FRACTIONS = (0.5, 0.7, 0.8, 0.9, 0.95, 1.05, 1.2, 1.5)
SLAS = {"p50(latency) <= 500ms": (0.5, 500.0), "p90(latency) <= 1s": (0.9, 1000.0),
        "p99(latency) <= 1s": (0.99, 1000.0)}


def rates(sla_text: str, seeds: range, step_s: float = 120.0,
          fractions: tuple[float, ...] = FRACTIONS) -> dict[float, dict[str, int]]:
    """Per load fraction: runs, rising, late part breaking the SLA, unsettled (both)."""
    q, lat = SLAS[sla_text]
    limit = mm1_limit(MU, q, lat)
    sla = parse_sla(sla_text)
    out = {f: {"runs": 0, "rising": 0, "late_breaks": 0, "unsettled": 0} for f in fractions}
    for seed in seeds:
        frame = mm1_frame([f * limit for f in fractions], mu_rps=MU, step_s=step_s, seed=seed)
        res = settling_by_step(make_trace(frame), MixSpec.single(), sla, "ttft_ms").of("run", "all")
        for k, f in enumerate(fractions):
            st = res.get(k)
            if st is None:
                continue
            o = out[f]
            o["runs"] += 1
            o["rising"] += st.rising
            o["late_breaks"] += bool(st.broken())
            o["unsettled"] += st.unsettled()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--step-s", type=float, default=120.0)
    a = ap.parse_args()
    for text in SLAS:
        q, lat = SLAS[text]
        limit = mm1_limit(MU, q, lat)
        print(f"{text}: true limit {limit:.3f} rps (ρ = {limit / MU:.2f}), {a.seeds} seeds, {a.step_s:g} s steps")
        res = rates(text, range(a.seeds), a.step_s)
        for f, o in res.items():
            n = max(o["runs"], 1)
            print(f"  {f:4.2f}× (ρ = {f * limit / MU:.2f}): rising {o['rising'] / n:6.1%}  late part breaks "
                  f"{o['late_breaks'] / n:6.1%}  unsettled {o['unsettled'] / n:6.1%}  ({o['unsettled']}/{n})")
        below = [o for f, o in res.items() if f < 1]
        fa = sum(o["unsettled"] for o in below) / max(sum(o["runs"] for o in below), 1)
        print(f"  false alarms below the limit: {fa:.2%}")


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
