"""A twin that knows its reach (#30): costs read from the per-request data, what the test identified, flags
with numbers. Every expected figure here is computed independently of bearing (the raw CSV read with the
csv module, scipy's Theil–Sen, closed forms)."""

from __future__ import annotations

import csv
import functools
import re
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
LLMD = ROOT / "data" / "loadtests" / "lmbenchmark-llm-d-exp2" / "llm-d-70b-2replicas"
AZURE_CONV = ROOT / "data" / "traces" / "azure-llm-inference-2023" / "AzureLLMInferenceTrace_conv.csv"


def _raw_sharegpt() -> dict[float, dict[str, np.ndarray]]:
    """The llm-d sharegpt CSVs as LMBenchmark wrote them, per QPS (no bearing code)."""
    out = {}
    for p in LLMD.glob("LMBench_sharegpt_output_*.csv"):
        qps = float(re.search(r"output_([0-9.]+)\.csv$", p.name).group(1))
        with p.open(newline="") as fh:
            rows = list(csv.DictReader(fh))
        out[qps] = {k: np.array([float(r[k]) for r in rows]) for k in rows[0]}
    return out


@functools.cache
def _sharegpt_twin():
    from bearing_lib.data.trace import RequestTrace
    from bearing_lib.loaders import load_trace
    from bearing_lib.twin import calibrate

    tr = load_trace(LLMD)
    part = tr.frame.filter(tr.frame["run_id"].str.ends_with("sharegpt"))
    return calibrate(RequestTrace(frame=part, provenance=tr.provenance), n_boot=200, seed=0)


def test_prefill_per_token_on_llmd_sharegpt_is_the_slope_ttft_shows():
    """The raw TTFT rises with the prompt at the lowest step (0.5 rps): Theil–Sen ≈ 0.078 ms/token, 95 % CI
    ≈ 0.051–0.109, Spearman p ≈ 5e-8. The twin used to fit 0 (CI 0–0); its estimate must now be non-zero and
    its interval must match the raw slope's (each holds the other's point value)."""
    from scipy.stats import spearmanr, theilslopes

    raw = _raw_sharegpt()[0.5]
    x, y = raw["prompt_tokens"], raw["ttft"] * 1000.0
    slope, _, lo, hi = theilslopes(y, x, 0.95)
    rho, pval = spearmanr(x, y)
    assert 0.07 < slope < 0.085 and lo > 0.04 and pval < 1e-6  # the figures of the issue, recomputed

    p = _sharegpt_twin().param("prefill_ms_per_token")
    assert p.identified and p.value > 0
    assert p.ci95[0] is not None and p.ci95[0] > 0
    assert p.ci95[0] <= slope <= p.ci95[1]  # the twin's interval holds the raw slope
    assert lo <= p.value <= hi  # and the raw interval holds the twin's value
    assert "Theil–Sen" in p.note and "used" in p.note
