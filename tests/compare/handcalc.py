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

    ``offered``: ``request_rate`` (``inf`` when unbounded); ``out_tps``: successful output tokens /
    ``duration``; per request, TPOT = sum(itls) / (output_len − 1) in ms (vLLM's own definition);
    ``tpot_p50``/``tpot_p90`` and ``ttft_p90`` are linear-interpolation percentiles over successes.
    """
    rows = []
    for f in sorted(folder.glob("*.json.gz")):
        d = json.load(gzip.open(f))
        ok = [e == "" for e in d["errors"]]
        out = np.array(d["output_lens"], float)[ok]
        ttft = np.array(d["ttfts"], float)[ok] * 1000
        itl_sum = np.array([sum(x) for x, k in zip(d["itls"], ok, strict=True) if k]) * 1000
        multi = out > 1
        tpot = itl_sum[multi] / (out[multi] - 1)
        rate = d["request_rate"]
        rows.append({
            "offered": math.inf if rate == "inf" else float(rate),
            "out_tps": out.sum() / d["duration"],
            "rps": len(out) / d["duration"],
            "tpot_p50": float(np.percentile(tpot, 50)),
            "tpot_p90": float(np.percentile(tpot, 90)),
            "ttft_p90": float(np.percentile(ttft, 90)),
        })
    return sorted(rows, key=lambda r: r["offered"])


def tp_pp(folder: Path) -> tuple[int, int]:
    m = re.search(r"tp(\d+)_pp(\d+)", folder.name)
    return int(m.group(1)), int(m.group(2))


def inference_perf_stages(folder: Path) -> list[dict]:
    """One dict per ``stage_N_lifecycle_metrics.json``: requested/achieved rate, output tok/s, TTFT p90, TPOT median."""
    rows = []
    for f in sorted(folder.glob("stage_*_lifecycle_metrics.json"), key=lambda p: int(p.name.split("_")[1])):
        d = json.loads(f.read_text())
        lat = d["successes"]["latency"]
        rows.append({
            "stage": int(f.name.split("_")[1]),
            "offered": d["load_summary"]["requested_rate"],
            "rps": d["successes"]["throughput"]["requests_per_sec"],
            "out_tps": d["successes"]["throughput"]["output_tokens_per_sec"],
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

    ``rps`` = ``completed / duration``; ``out_tps`` = ``total_output_tokens / duration``; ``out_per_req`` and
    ``in_per_req`` per completed request; ``ttft_p95`` the tool's own ``p95_ttft_ms`` (README §1).
    """
    rows = []
    for f in sorted(folder.glob("*.json")):
        d = json.loads(f.read_text())
        rows.append({
            "offered": float(d["request_rate"]),
            "rps": d["completed"] / d["duration"],
            "out_tps": d["total_output_tokens"] / d["duration"],
            "out_per_req": d["total_output_tokens"] / d["completed"],
            "in_per_req": d["total_input_tokens"] / d["completed"],
            "ttft_p95": d["p95_ttft_ms"],
        })
    return rows


def sglang_lines(path: Path) -> dict[str, list[dict]]:
    """SGLang ``bench_serving`` JSONL lines grouped by dataset (README §2; ``Infinity`` is read by ``json``).

    ``rps`` = ``completed / duration``; ``out_tps`` = ``output_throughput``; ``per_user`` = output tok/s over
    the mean in flight (Little's law: ``rps × mean_e2e_latency_ms / 1000``), the fallback when no TPOT is
    reported; ``ttft_p50`` and ``itl_p50`` the tool's medians (ms).
    """
    out: dict[str, list[dict]] = {}
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        d = json.loads(line)
        rps = d["completed"] / d["duration"]
        out.setdefault(d["dataset_name"], []).append({
            "offered": float(d["request_rate"]),
            "rps": rps,
            "out_tps": d["output_throughput"],
            "per_user": d["output_throughput"] / (rps * d["mean_e2e_latency_ms"] / 1000.0),
            "ttft_p50": d["median_ttft_ms"],
            "itl_p50": d["median_itl_ms"],
        })
    return out
