# ruff: noqa: E501
"""Run `bearing limits` on every real sweep and compare with the raw bracket (issue 23).

Usage: BEARING_SHARED_DATA=/work/shared/data .venv/bin/python tests/limits/compare_real_brackets.py OUTDIR
Prints one line per sweep (and writes OUTDIR/summary.json).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import raw_brackets as rb  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
S = Path(os.environ.get("BEARING_SHARED_DATA", "/work/shared/data")) / "loadtests"
B = ROOT / "data" / "loadtests"
SU = S / "vllm-bench-serve/surajssd-llm-k8s-azure-a100"
LM = S / "lmbenchmark/llm-d-benchmark-exp2"
VG = S / "vegeta/ferdinandzhong-tgi-trial"
IP = S / "inference-perf/k8s-sigs-kubecon-na-2025"
SG = S / "sglang-bench-serving/datacrunch-h200-benchmarks"

# name, path given to bearing, extra args, SLA, threshold (ms), raw levels, run_id filter (substring or None)
SWEEPS = [
    ("surajssd deepseek 01_tp8_pp2_no_ib", SU / "deepseek-v2.5/01_tp8_pp2_no_ib", [], "p90(ttft) <= 300ms", 300, lambda: rb.vllm_requests(SU / "deepseek-v2.5/01_tp8_pp2_no_ib", 90), None),
    ("surajssd deepseek 02_tp8_pp2_ib", SU / "deepseek-v2.5/02_tp8_pp2_ib", [], "p90(ttft) <= 290ms", 290, lambda: rb.vllm_requests(SU / "deepseek-v2.5/02_tp8_pp2_ib", 90), None),
    ("surajssd llama 01_tp8_pp1", SU / "llama-3.3-70b/01_tp8_pp1", [], "p90(ttft) <= 300ms", 300, lambda: rb.vllm_requests(SU / "llama-3.3-70b/01_tp8_pp1", 90), None),
    ("surajssd llama 02_tp4_pp2_no_IB", SU / "llama-3.3-70b/02_tp4_pp2_no_IB", [], "p90(ttft) <= 200ms", 200, lambda: rb.vllm_requests(SU / "llama-3.3-70b/02_tp4_pp2_no_IB", 90), None),
    ("surajssd llama 03_tp4_pp2_IB", SU / "llama-3.3-70b/03_tp4_pp2_IB", [], "p90(ttft) <= 185ms", 185, lambda: rb.vllm_requests(SU / "llama-3.3-70b/03_tp4_pp2_IB", 90), None),
    ("surajssd llama 04_tp4_pp2_IB", SU / "llama-3.3-70b/04_tp4_pp2_IB", [], "p90(ttft) <= 190ms", 190, lambda: rb.vllm_requests(SU / "llama-3.3-70b/04_tp4_pp2_IB", 90), None),
    ("lmbench llm-d-70b sharegpt", LM / "llm-d-70b-2replicas", [], "p90(ttft) <= 2000ms", 2000, lambda: rb.lmbench(LM / "llm-d-70b-2replicas", "sharegpt", 90), "sharegpt"),
    ("lmbench llm-d-70b short_input", LM / "llm-d-70b-2replicas", [], "p90(ttft) <= 150ms", 150, lambda: rb.lmbench(LM / "llm-d-70b-2replicas", "short_input", 90), "short_input"),
    ("lmbench vllm-70b sharegpt", LM / "vllm-70b-2replicas", [], "p90(ttft) <= 1000ms", 1000, lambda: rb.lmbench(LM / "vllm-70b-2replicas", "sharegpt", 90), "sharegpt"),
    ("lmbench vllm-70b short_input", LM / "vllm-70b-2replicas", [], "p90(ttft) <= 120ms", 120, lambda: rb.lmbench(LM / "vllm-70b-2replicas", "short_input", 90), "short_input"),
    ("bundled lmbench llm-d-70b sharegpt", B / "lmbenchmark-llm-d-exp2/llm-d-70b-2replicas", [], "p90(ttft) <= 2000ms", 2000, lambda: rb.lmbench(B / "lmbenchmark-llm-d-exp2/llm-d-70b-2replicas", "sharegpt", 90), "sharegpt"),
    ("bundled lmbench llm-d-70b short_input", B / "lmbenchmark-llm-d-exp2/llm-d-70b-2replicas", [], "p90(ttft) <= 150ms", 150, lambda: rb.lmbench(B / "lmbenchmark-llm-d-exp2/llm-d-70b-2replicas", "short_input", 90), "short_input"),
    ("bundled lmbench vllm-70b sharegpt", B / "lmbenchmark-llm-d-exp2/vllm-70b-2replicas", [], "p90(ttft) <= 1000ms", 1000, lambda: rb.lmbench(B / "lmbenchmark-llm-d-exp2/vllm-70b-2replicas", "sharegpt", 90), "sharegpt"),
    ("bundled lmbench vllm-70b short_input", B / "lmbenchmark-llm-d-exp2/vllm-70b-2replicas", [], "p90(ttft) <= 120ms", 120, lambda: rb.lmbench(B / "lmbenchmark-llm-d-exp2/vllm-70b-2replicas", "short_input", 90), "short_input"),
    ("vegeta bloomz-3b tgi", VG / "bloomz-3b/converted_to_vegeta_json", [], "p90(latency) <= 3500ms", 3500, lambda: rb.vegeta_json(VG / "bloomz-3b/converted_to_vegeta_json", "tgi", 90), "tgi"),
    ("vegeta bloomz-7b tgi", VG / "bloomz-7b/converted_to_vegeta_json", [], "p90(latency) <= 10s", 10000, lambda: rb.vegeta_json(VG / "bloomz-7b/converted_to_vegeta_json", "tgi", 90), "tgi"),
    ("vegeta codegen2-1b tgi", VG / "codegen2-1b/converted_to_vegeta_json", [], "p90(latency) <= 2500ms", 2500, lambda: rb.vegeta_json(VG / "codegen2-1b/converted_to_vegeta_json", "tgi", 90), "tgi"),
    ("vegeta codegen2-1b ray", VG / "codegen2-1b/converted_to_vegeta_json", [], "p90(latency) <= 10s", 10000, lambda: rb.vegeta_json(VG / "codegen2-1b/converted_to_vegeta_json", "ray", 90), "ray"),
] + [
    (f"inference-perf {c}", IP / c, [], "p90(ttft) <= 500ms", 500, (lambda c=c: rb.inference_perf(IP / c, "p90")), None)
    for c in ["vllm", "vllm_batch_size", "vllm_chunking_and_prefix_caching", "vllm_eagle", "vllm_quantization", "vllm_v0_engine"]
] + [
    ("sglang llama-3.3-70b online random", SG / "llama_3_3_70b_online_output.jsonl", [], "p50(ttft) <= 150ms", 150, lambda: rb.sglang_jsonl(SG / "llama_3_3_70b_online_output.jsonl", "random"), "random"),
    ("sglang llama-405b online random", SG / "llama_405b_online_output.jsonl", [], "p50(ttft) <= 400ms", 400, lambda: rb.sglang_jsonl(SG / "llama_405b_online_output.jsonl", "random"), "random"),
    ("llmperf yi-34b 4xa10g", S / "llmperf/yi-34b-4xa10g-vllm-concurrency-sweep-TRANSCRIBED", [], "p90(ttft) <= 3s", 3000, lambda: rb.llmperf_summaries(S / "llmperf/yi-34b-4xa10g-vllm-concurrency-sweep-TRANSCRIBED"), None),
    ("aiperf akamaslabs sweep (TRANSCRIBED; bounds, no percentiles)", S / "aiperf/akamaslabs-g7-4500-concurrency-sweep-TRANSCRIBED/sweep_aggregate/profile_export_aiperf_sweep.csv", [], "p90(ttft) <= 1s", 1000, lambda: rb.aiperf_sweep_bounds(S / "aiperf/akamaslabs-g7-4500-concurrency-sweep-TRANSCRIBED/sweep_aggregate/profile_export_aiperf_sweep.csv", 1000), None),
    ("guidellm nirjhar17 sweep (DERIVED)", S / "guidellm/nirjhar17-pd-disaggregation-DERIVED/all-benchmarks.csv", [], "p50(ttft) <= 100ms", 100, lambda: rb.guidellm_table(S / "guidellm/nirjhar17-pd-disaggregation-DERIVED/all-benchmarks.csv"), "sweep"),
]


def main(outdir: Path, only: str | None = None) -> None:
    outdir.mkdir(parents=True, exist_ok=True)
    summary = []
    for i, (name, path, extra, sla, thr, raw, runf) in enumerate(SWEEPS):
        if only and only not in name:
            continue
        levels = raw()
        verdicts = bool(levels) and isinstance(levels[0][1], str)
        lo, hi = rb.verdict_bracket(levels) if verdicts else rb.raw_bracket(levels, thr)
        out = outdir / f"{i:02d}.json"
        if not out.exists():
            p = subprocess.run([str(ROOT / ".venv/bin/bearing"), "limits", str(path), "--sla", sla, "--mixes", "none", "--json", str(out), *extra],
                               capture_output=True, text=True)
            if p.returncode:
                print(name, "BEARING FAILED", p.stderr[-600:])
                continue
        d = json.loads(out.read_text())
        ents = [m for m in d["mixes"] if runf is None or m["run_id"] == runf or m["run_id"].split("/")[-1] == runf or m["run_id"].split("/")[-1].startswith(runf + "-")]
        for m in ents:
            qu = m["q_ult"]
            v = qu["value"]
            inside = v is not None and lo is not None and hi is not None and lo <= v <= hi
            row = dict(name=name, run=m["run_id"], sla=sla, levels=[(a, b if verdicts else round(b, 1)) for a, b in levels], raw=[lo, hi], value=v, ci95=qu["ci95"],
                       bracket=qu["bracket"], censored=qu["censored"], statement=qu["statement"], inside=inside)
            summary.append(row)
            print(f"{name} [{m['run_id']}] {sla} raw=[{lo}, {hi}] bearing={v} ci={qu['ci95']} br={qu['bracket']} cens={qu['censored']} '{qu['statement']}' -> {'INSIDE' if inside else 'OUT'}")
        if not ents:
            print(name, "no entry; runs:", [m["run_id"] for m in d["mixes"]], "skipped:", d.get("skipped"))
    (outdir / "summary.json").write_text(json.dumps(summary, indent=1, default=str))


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else None)
