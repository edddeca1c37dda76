"""The twin on real per-request sweeps: calibrate per run, leave the highest steps out, compare.

``python -m tests.twin.real_sweeps`` prints the tables of docs/twin.md "Real sweeps": the bundled
LMBenchmark sweeps (data/loadtests/lmbenchmark-llm-d-exp2/, Llama-3-70B, 2 replicas; vLLM and
llm-d; workloads sharegpt and short_input), one twin per (deployment, workload).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parents[2]
LMBENCH = ROOT / "data" / "loadtests" / "lmbenchmark-llm-d-exp2"
SLA = "p99(ttft) <= 2s"


def runs():
    """(label, RequestTrace) per deployment × workload of the bundled LMBenchmark sweeps."""
    from bearing_lib.data.trace import RequestTrace
    from bearing_lib.loaders import load_trace

    for dep in ("vllm-70b-2replicas", "llm-d-70b-2replicas"):
        tr = load_trace(LMBENCH / dep)
        for (run,), part in tr.frame.group_by(["run_id"], maintain_order=True):
            yield f"{dep}/{str(run).rsplit('/', 1)[-1]}", RequestTrace(frame=part, provenance=tr.provenance)


def table(label: str, trace, sla: str = SLA) -> tuple[object, list[str]]:
    from bearing_lib.twin import calibrate, validate

    t0 = time.perf_counter()
    tw = calibrate(trace)
    tw.validation = validate(tw, trace, sla)
    dt = time.perf_counter() - t0
    lines = [f"**{label}** ({tw.n_requests} requests, calibrated and validated in {dt:.1f} s): "
             f"{'trusted' if tw.trusted else 'UNTRUSTED'}" + ("" if tw.trusted else " — " + "; ".join(
                 tw.validation.reasons[:3]) + (" …" if len(tw.validation.reasons) > 3 else ""))]
    lines.append("")
    lines.append("| step (rps) | held out | throughput meas / twin | P99 TTFT ms meas / twin | "
                 "P50 latency ms meas / twin | SLA meas / twin |")
    lines.append("|---|---|---|---|---|---|")
    for r in tw.validation.rows:
        m, p = r.measured, r.predicted

        def f(k: str, d: int = 0, m: dict = m, p: dict = p) -> str:
            a, b = m.get(k), p.get(k)
            return f"{'–' if a is None else f'{a:.{d}f}'} / {'–' if b is None else f'{b:.{d}f}'}"

        verdict = {True: "pass", False: "fail", None: "–"}
        lines.append(f"| {r.offered_load:g} | {'**yes**' if r.held_out else ''} | {f('throughput_rps', 2)} | "
                     f"{f('ttft_p99_ms')} | {f('latency_p50_ms')} | "
                     f"{verdict[r.sla_pass_measured]} / {verdict[r.sla_pass_predicted]} |")
    params = ", ".join(p.text() for p in tw.params)
    lines.append("")
    lines.append(f"Parameters: {params}; KV policy **{tw.kv_policy}** ({tw.kv_policy_note})")
    return tw, lines


def main() -> int:
    only = sys.argv[1] if len(sys.argv) > 1 else None
    for label, tr in runs():
        if only and only not in label:
            continue
        _, lines = table(label, tr)
        print("\n".join(lines))
        print()
    return 0


if __name__ == "__main__":
    _ = pl  # polars is imported for the loaders' frames
    raise SystemExit(main())
