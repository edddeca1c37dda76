"""Benchmark (not a test): load a series of vLLM + DCGM scrapes as server metrics, then summarise per step.

Generates a synthetic series (fixed seed; 720 scrapes = 3 h at 15 s, 4 engines, ~120 samples per
scrape) under ``bench/out/scrapes/`` (gitignored), then times, in this process:

- the reference: ``prometheus_client``'s parser alone over every file (the floor bearing's
  ``prometheus-text`` loader builds on: it cannot be faster than this);
- ``bearing_lib.load(folder)`` (detection, parse, signal mapping, the canonical frame);
- ``align_to_steps`` + ``step_signals`` over 12 steps of 15 min.

Usage::

    python bench/bench_server_metrics.py               # 720 scrapes
    python bench/bench_server_metrics.py --scrapes 120 # a quick run
"""

from __future__ import annotations

import argparse
import random
import shutil
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out" / "scrapes"
SEED = 20261201
T0 = 1_733_000_000


def generate(n: int, out: Path) -> None:
    rng = random.Random(SEED)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    preempt = [0.0] * 4
    for i in range(n):
        lines = []
        for name, typ in (("vllm:num_requests_running", "gauge"), ("vllm:num_requests_waiting", "gauge"),
                          ("vllm:kv_cache_usage_perc", "gauge"), ("vllm:num_preemptions", "counter"),
                          ("DCGM_FI_DEV_GPU_UTIL", "gauge"), ("DCGM_FI_DEV_FB_USED", "gauge")):
            lines.append(f"# TYPE {name} {typ}")
            for e in range(4):
                lab = f'engine="{e}",model_name="llama",pod="vllm-{e}"'
                if name == "vllm:num_preemptions":
                    preempt[e] += rng.random() < 0.1
                    lines.append(f"vllm:num_preemptions_total{{{lab}}} {preempt[e]}")
                elif name.startswith("DCGM"):
                    v = rng.uniform(20, 99) if "UTIL" in name else rng.uniform(60000, 78000)
                    lines.append(f'{name}{{gpu="{e}",UUID="GPU-{e}",Hostname="node-{e // 2}"}} {v:.1f}')
                else:
                    lines.append(f"{name}{{{lab}}} {rng.uniform(0, 1) if 'kv' in name else rng.randint(0, 64)}")
        lines.append("# TYPE vllm:e2e_request_latency_seconds histogram")
        for e in range(4):
            acc = 0
            for le in ("0.1", "0.5", "1.0", "2.5", "5.0", "10.0", "+Inf"):
                acc += rng.randint(0, 50)
                lines.append(f'vllm:e2e_request_latency_seconds_bucket{{le="{le}",pod="vllm-{e}"}} {acc}')
        (out / f"scrape-{T0 + 15 * i}.prom").write_text("\n".join(lines) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scrapes", type=int, default=720)
    args = ap.parse_args()
    generate(args.scrapes, OUT)
    files = sorted(OUT.glob("*.prom"))

    from prometheus_client.parser import text_string_to_metric_families

    t = time.perf_counter()
    n_ref = sum(len(f.samples) for p in files for f in text_string_to_metric_families(p.read_text()))
    ref_s = time.perf_counter() - t

    from bearing_lib.loaders import load
    from bearing_lib.servers.metrics import align_to_steps, step_signals

    t = time.perf_counter()
    ds = load(OUT)
    load_s = time.perf_counter() - t
    windows = [{"run_id": "bench", "step": k, "start_s": T0 + 900.0 * k, "end_s": T0 + 900.0 * (k + 1)}
               for k in range(max(1, args.scrapes * 15 // 900))]
    t = time.perf_counter()
    table = step_signals(align_to_steps(ds, windows))
    step_s = time.perf_counter() - t
    print(f"{len(files)} scrapes, {n_ref:,} samples")
    print(f"reference (prometheus_client parser only): {ref_s:.2f} s")
    print(f"bearing load (parse + map + frame):        {load_s:.2f} s ({ds.frame.height:,} rows)")
    print(f"align to {len(windows)} steps + step_signals:       {step_s:.2f} s ({table.height} rows)")


if __name__ == "__main__":
    main()
