"""Independent hand calculations from the raw load-test files (json, gzip, numpy only; no bearing loader).

Kept beside the tests that use them (statsmodels keeps the script behind a reference value next to the
test). Each function reads a tool's own files as its documentation describes them
(``shared/data/loadtests/README.md`` §1 for vLLM ``benchmark_serving.py``, §7 for inference-perf).
"""

from __future__ import annotations

import gzip
import json
import math
import re
from pathlib import Path

import numpy as np


def vllm_steps(folder: Path) -> list[dict]:
    """One dict per ``benchmark_serving.py`` result file of a surajssd deployment folder.

    ``offered``: ``request_rate`` (``inf`` when unbounded); ``out_tps``: successful output tokens / the span
    (:func:`span`, window ``num_prompts / request_rate``, ``l0`` the lowest step median E2E); per request,
    TPOT = sum(itls) / (output_len − 1) in ms (vLLM's own definition);
    ``tpot_p50``/``tpot_p90`` and ``ttft_p90`` are linear-interpolation percentiles over successes.
    """
    rows = []
    docs = [json.load(gzip.open(f)) for f in sorted(folder.glob("*.json.gz"))]
    med = [float(np.median([t + sum(i) for t, i, e in zip(d["ttfts"], d["itls"], d["errors"], strict=True) if not e]))
           for d in docs]
    l0 = min(med)
    for d, m in zip(docs, med, strict=True):
        ok = [e == "" for e in d["errors"]]
        out = np.array(d["output_lens"], float)[ok]
        ttft = np.array(d["ttfts"], float)[ok] * 1000
        itl_sum = np.array([sum(x) for x, k in zip(d["itls"], ok, strict=True) if k]) * 1000
        multi = out > 1
        tpot = itl_sum[multi] / (out[multi] - 1)
        rate = d["request_rate"]
        # the duration includes the drain (vllm/benchmarks/serve.py benchmark): completed over the span
        # (an unbounded rate sends every request at once: the server is busy from the start, the duration stands)
        sp = d["duration"] if rate == "inf" else span(d["duration"], d["num_prompts"] / float(rate), l0, m)
        rows.append({
            "offered": math.inf if rate == "inf" else float(rate),
            "out_tps": out.sum() / sp,
            "rps": len(out) / sp,
            "tpot_p50": float(np.percentile(tpot, 50)),
            "tpot_p90": float(np.percentile(tpot, 90)),
            "ttft_p90": float(np.percentile(ttft, 90)),
        })
    return sorted(rows, key=lambda r: r["offered"])


def span(duration: float, window: float | None, l0: float | None, lat: float | None) -> float:
    """Seconds a rate step's completed requests are counted over (docs/limits.md, "Achieved throughput"), for a
    tool whose duration includes the drain: the send window where no queue built up (the step's typical latency
    under 3 × the run's unloaded latency ``l0``), else ``max(duration − l0, window)``."""
    if window is not None and lat is not None and l0 is not None and lat < 3 * l0:
        return window
    d = duration - l0 if l0 is not None and 0 <= l0 < duration else duration
    return max(d, window) if window is not None else d


def tp_pp(folder: Path) -> tuple[int, int]:
    m = re.search(r"tp(\d+)_pp(\d+)", folder.name)
    return int(m.group(1)), int(m.group(2))


def inference_perf_stages(folder: Path) -> list[dict]:
    """One dict per ``stage_N_lifecycle_metrics.json``: requested/achieved rate, output tok/s, TTFT p90, TPOT median."""
    rows = []
    files = sorted(folder.glob("stage_*_lifecycle_metrics.json"), key=lambda p: int(p.name.split("_")[1]))
    docs = [json.loads(f.read_text()) for f in files]
    l0 = min(d["successes"]["latency"]["request_latency"]["median"] for d in docs)
    for f, d in zip(files, docs, strict=True):
        lat = d["successes"]["latency"]
        thr = d["successes"]["throughput"]
        # requests_per_sec divides the successes by the benchmark time, which runs until every request finished
        bench = d.get("benchmark_time_seconds") or d["successes"]["count"] / thr["requests_per_sec"]
        sp = span(bench, d["load_summary"]["send_duration"], l0, lat["request_latency"]["median"])
        rows.append({
            "stage": int(f.name.split("_")[1]),
            "offered": d["load_summary"]["requested_rate"],
            "rps": d["successes"]["count"] / sp,
            "out_tps": thr["output_tokens_per_sec"] * bench / sp,
            "ttft_p90": lat["time_to_first_token"]["p90"] * 1000,
            "tpot_p50": lat["time_per_output_token"]["median"] * 1000,
        })
    return rows


def bracket(rows: list[dict], passes) -> tuple[float | None, float | None]:
    """(highest passing load below the first failing one, lowest failing load) in load order."""
    rows = sorted((r for r in rows if math.isfinite(r["offered"])), key=lambda r: r["offered"])
    first_fail = next((r["offered"] for r in rows if not passes(r)), None)
    last_pass = max((r["offered"] for r in rows if passes(r) and (first_fail is None or r["offered"] < first_fail)),
                    default=None)
    return last_pass, first_fail


def cost_per_1m(price_per_hour: float, rps: float, tokens_per_request: float) -> float:
    """$ per 1M output tokens of one instance at ``rps``."""
    return price_per_hour / (rps * tokens_per_request * 3600.0) * 1e6


def vllm_summary_files(folder: Path) -> list[dict]:
    """One dict per ``benchmark_serving.py`` result without per-request arrays (llm-d exp-7, ~v0.8.5).

    ``rps`` = ``completed / span``; ``out_tps`` = ``total_output_tokens / span`` (:func:`span`); ``out_per_req`` and
    ``in_per_req`` per completed request; ``ttft_p95`` the tool's own ``p95_ttft_ms`` (README §1).
    """
    rows = []
    docs = [json.loads(f.read_text()) for f in sorted(folder.glob("*.json"))]
    # no E2E statistic in these files: mean TTFT + mean TPOT × (output tokens per request − 1)
    lat = [(d["mean_ttft_ms"] + d["mean_tpot_ms"] * (d["total_output_tokens"] / d["completed"] - 1)) / 1000
           for d in docs]
    for d, lt in zip(docs, lat, strict=True):
        sp = span(d["duration"], d["num_prompts"] / d["request_rate"], min(lat), lt)
        rows.append({
            "offered": float(d["request_rate"]),
            "rps": d["completed"] / sp,
            "out_tps": d["total_output_tokens"] / sp,
            "out_per_req": d["total_output_tokens"] / d["completed"],
            "in_per_req": d["total_input_tokens"] / d["completed"],
            "ttft_p95": d["p95_ttft_ms"],
        })
    return rows


def sglang_lines(path: Path) -> dict[str, list[dict]]:
    """SGLang ``bench_serving`` JSONL lines grouped by dataset (README §2; ``Infinity`` is read by ``json``).

    ``rps`` = ``completed / span``; ``out_tps`` = ``output_throughput`` over the span (:func:`span`); ``per_user`` =
    output tok/s over
    the mean in flight (Little's law: ``rps × mean_e2e_latency_ms / 1000``), the fallback when no TPOT is
    reported; ``ttft_p50`` and ``itl_p50`` the tool's medians (ms).
    """
    out: dict[str, list[dict]] = {}
    lines = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    l0 = {}
    for d in lines:
        l0[d["dataset_name"]] = min(l0.get(d["dataset_name"], math.inf), d["median_e2e_latency_ms"] / 1000)
    for d in lines:
        rate = float(d["request_rate"])
        # the duration includes the drain (bench_serving.py benchmark); window completed / rate (estimated)
        sp = (span(d["duration"], d["completed"] / rate, l0[d["dataset_name"]], d["median_e2e_latency_ms"] / 1000)
              if math.isfinite(rate) and d["max_concurrency"] is None else d["duration"])
        rps = d["completed"] / sp
        out.setdefault(d["dataset_name"], []).append({
            "offered": rate,
            "rps": rps,
            "out_tps": d["output_throughput"] * d["duration"] / sp,
            "per_user": d["output_throughput"] * d["duration"] / sp / (rps * d["mean_e2e_latency_ms"] / 1000.0),
            "ttft_p50": d["median_ttft_ms"],
            "itl_p50": d["median_itl_ms"],
        })
    return out
