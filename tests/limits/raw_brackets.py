"""Raw-file brackets of the SLA crossing for the real sweeps (issue 23), read WITHOUT bearing.

Each reader opens the tool's files with json/csv/gzip only and returns one
``(load, percentile)`` pair per load level, sorted by load. Per-request tools: the
percentile is ``numpy.percentile(..., method="linear")`` over the successful requests
of the level (every request in the file; no steady-window trimming). Summary tools:
the tool's own reported percentile.

``raw_bracket(levels, threshold)`` is [highest load whose percentile meets the
threshold below the first load that breaks it, first load that breaks it]; the lower
end is None when the first level already breaks, the upper end None when none breaks.
"""

from __future__ import annotations

import csv
import gzip
import json
import math
import re
from pathlib import Path

import numpy as np


def pct(values, q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=float), q, method="linear"))


def raw_bracket(levels: list[tuple[float, float]], threshold: float) -> tuple[float | None, float | None]:
    levels = sorted(levels)
    lo = None
    for load, value in levels:
        if value > threshold:
            return lo, load
        lo = load
    return lo, None


def vllm_requests(folder: Path, q: float, metric: str = "ttft") -> list[tuple[float, float]]:
    """vLLM benchmark_serving (~v0.8) files with per-request arrays; ms. Errors out."""
    out = []
    for f in sorted(folder.glob("*qps_*.json.gz")):
        d = json.load(gzip.open(f))
        rate = float(d["request_rate"])  # "inf" -> inf
        ok = [i for i, e in enumerate(d["errors"]) if not e]
        if metric == "ttft":
            vals = [d["ttfts"][i] * 1000 for i in ok]
        else:  # e2e rebuilt as ttft + sum(itls)
            vals = [(d["ttfts"][i] + sum(d["itls"][i])) * 1000 for i in ok]
        out.append((rate, pct(vals, q)))
    return sorted(out)


def lmbench(folder: Path, workload: str, q: float) -> list[tuple[float, float]]:
    """LMBenchmark CSVs, one per QPS (level only in the file name); ttft in s -> ms.
    Failed requests are absent from the files, so the percentile is over those present."""
    pat = {"sharegpt": r"LMBench_sharegpt_output_([\d.]+)\.csv",
           "short_input": r"LMBench_short_input_qps([\d.]+)\.csv"}[workload]
    out = []
    for f in folder.glob("LMBench_*.csv"):
        m = re.fullmatch(pat, f.name)
        if not m:
            continue
        with open(f, newline="") as fh:
            ttft = [float(r["ttft"]) * 1000 for r in csv.DictReader(fh)]
        out.append((float(m.group(1)), pct(ttft, q)))
    return sorted(out)


def vegeta_json(folder: Path, prefix: str, q: float) -> list[tuple[float, float]]:
    """vegeta encode --to json NDJSON, one file per rate (rate in the file name);
    latency ns -> ms; only code 200 without error text (timeouts/424/500 out)."""
    out = []
    for f in folder.glob(f"{prefix}_*qps_*_results.json"):
        rate = float(re.search(r"_([\d.]+)qps_", f.name).group(1))
        lat = []
        with open(f) as fh:
            for line in fh:
                r = json.loads(line)
                if r["code"] == 200 and not r["error"]:
                    lat.append(r["latency"] / 1e6)
        out.append((rate, pct(lat, q)))
    return sorted(out)


def inference_perf(folder: Path, key: str, metric: str = "time_to_first_token") -> list[tuple[float, float]]:
    """inference-perf stage files; the tool's own percentile (s -> ms) at requested_rate."""
    out = []
    for f in folder.glob("stage_*_lifecycle_metrics.json"):
        d = json.loads(f.read_text())
        out.append((float(d["load_summary"]["requested_rate"]), d["successes"]["latency"][metric][key] * 1000))
    return sorted(out)


def sglang_jsonl(path: Path, dataset: str, key: str = "median_ttft_ms") -> list[tuple[float, float]]:
    """SGLang bench_serving JSONL, one line per rate; the tool's own statistic (ms)."""
    out = []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        d = json.loads(line)  # json accepts a bare Infinity
        if d.get("dataset_name") != dataset:
            continue
        rate = float(d["request_rate"])
        if math.isfinite(rate):
            out.append((rate, float(d[key])))
    return sorted(out)


def llmperf_summaries(folder: Path, key: str = "results_ttft_s_quantiles_p90") -> list[tuple[float, float]]:
    """LLMPerf *_summary.json per concurrency; the tool's own quantile (s -> ms)."""
    out = []
    for f in folder.glob("*/*_summary.json"):
        d = json.loads(f.read_text())
        out.append((float(d["num_concurrent_requests"]), float(d[key]) * 1000))
    return sorted(out)


def guidellm_table(path: Path, column: str = "ttft_median_ms") -> list[tuple[float, float]]:
    """guidellm DERIVED table: the constant-rate rows of the sweep[*] entries."""
    out = []
    with open(path, newline="") as fh:
        for r in csv.DictReader(fh):
            if r["source_file"].startswith("sweep[") and r["profile"] == "constant":
                out.append((float(r["rate"]), float(r[column])))
    return sorted(out)


def aiperf_sweep_bounds(path: Path, threshold_ms: float, q: float = 90,
                        metric: str = "time_to_first_token") -> list[tuple[float, str]]:
    """AIPerf sweep CSV (multi-section, CRLF): no percentiles, only per-level mean and
    per-request min/max. A percentile clause is decided only where bounds allow:
    'pass' when max <= threshold (every request meets it); 'fail' when the mean exceeds
    what it could be with at most (100-q)% of requests above the threshold,
    q/100 * threshold + (1 - q/100) * max; else 'unknown'."""
    rows = []
    with open(path, newline="") as fh:
        for line in fh:
            if not line.strip():
                break
            rows.append(line)
    out = []
    for r in csv.DictReader(rows):
        mean, mx = float(r[f"{metric}_mean"]), float(r[f"{metric}_max"])
        if mx <= threshold_ms:
            verdict = "pass"
        elif mean > q / 100 * threshold_ms + (1 - q / 100) * mx:
            verdict = "fail"
        else:
            verdict = "unknown"
        out.append((float(r["concurrency"]), verdict))
    return sorted(out)


def verdict_bracket(levels: list[tuple[float, str]]) -> tuple[float | None, float | None]:
    """[highest known pass below the first known fail, first known fail]."""
    lo = None
    for load, v in sorted(levels):
        if v == "fail":
            return lo, load
        if v == "pass":
            lo = load
    return lo, None
