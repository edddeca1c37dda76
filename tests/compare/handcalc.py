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
