"""Fidelity on real pairs (the bundled data), every figure checked against the raw files read here with
polars/json and scipy, without bearing's loaders:

* the demo: LMBenchmark ShareGPT run (llm-d, Llama-3-70B) against the Azure 2023 conversation trace;
* a short-prompt test against long-prompt traces: the LMBenchmark ``short_input`` run (~76-token prompts,
  20-token outputs) against the Azure 2023 *code* trace (median prompt 1,469) and the Mooncake FAST'25
  conversation trace (mean prompt ~12,000 tokens, with prefix-cache hits).
"""

from __future__ import annotations

import glob
import json
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy.stats import ks_2samp, wasserstein_distance

from bearing_lib.fidelity import assess_fidelity
from bearing_lib.fidelity.burstiness import burstiness_dimension
from bearing_lib.limits.sla import parse_sla
from bearing_lib.loaders import load

ROOT = Path(__file__).resolve().parents[2]
LMB = ROOT / "data/loadtests/lmbenchmark-llm-d-exp2/llm-d-70b-2replicas"
AZ_CONV = ROOT / "data/traces/azure-llm-inference-2023/AzureLLMInferenceTrace_conv.csv"
AZ_CODE = ROOT / "data/traces/azure-llm-inference-2023/AzureLLMInferenceTrace_code.csv"
MOON = ROOT / "data/traces/mooncake-fast25/conversation_trace.jsonl"
SHORT, SHAREGPT = "llm-d-70b-2replicas/short_input", "llm-d-70b-2replicas/sharegpt"


def q3(v: np.ndarray) -> list[float]:
    return [float(x) for x in np.quantile(np.asarray(v, float), [0.5, 0.9, 0.99], method="linear")]


def raw_lmb(pattern: str) -> list[pl.DataFrame]:
    """The LMBenchmark CSVs of one workload, one frame per QPS step, as written."""
    return [pl.read_csv(f) for f in sorted(glob.glob(str(LMB / pattern)))]


def raw_azure(path: Path) -> pl.DataFrame:
    df = pl.read_csv(path).with_columns(pl.col("TIMESTAMP").str.to_datetime("%Y-%m-%d %H:%M:%S%.f", time_unit="ns"))
    return df.with_columns(((pl.col("TIMESTAMP") - pl.col("TIMESTAMP").min()).dt.total_nanoseconds() / 1e9)
                           .alias("t"))


def raw_mooncake() -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Input and output lengths, start times (s) and the token hit ratio of an unbounded prefix cache replayed
    over the hash ids in arrival order (512-token blocks, the last one partial; hits stop at the first miss)."""
    rows = [json.loads(line) for line in MOON.read_text().splitlines() if line.strip()]
    rows = sorted(enumerate(rows), key=lambda r: (r[1]["timestamp"], r[0]))
    seen: set[int] = set()
    cached = total = 0
    for _, r in rows:
        ids, n_in = r["hash_ids"], r["input_length"]
        k = 0
        while k < len(ids) and ids[k] in seen:
            k += 1
        sizes = [512] * (len(ids) - 1) + [n_in - 512 * (len(ids) - 1)] if ids else []
        cached += sum(sizes[:k])
        total += n_in
        seen.update(ids)
    arr = [r for _, r in rows]
    return (np.array([r["input_length"] for r in arr], float), np.array([r["output_length"] for r in arr], float),
            np.array([r["timestamp"] for r in arr], float) / 1000.0, cached / total)


def raw_iod(starts: np.ndarray, tau: float = 1.0) -> float | None:
    t = np.sort(starts)
    n = math.floor((t[-1] - t[0]) / tau)
    if n < 10:
        return None
    idx = np.floor((t - t[0]) / tau).astype(int)
    c = np.bincount(idx[idx < n], minlength=n)
    return float(c.var(ddof=1) / c.mean())


@pytest.fixture(scope="module")
def lmb():
    return load(LMB)


def check_lengths(dim, test: np.ndarray, prod: np.ndarray) -> None:
    assert [dim.test.p50, dim.test.p90, dim.test.p99] == pytest.approx(q3(test))
    assert [dim.production.p50, dim.production.p90, dim.production.p99] == pytest.approx(q3(prod))
    assert (dim.test.min, dim.test.max, dim.production.n) == (test.min(), test.max(), prod.size)
    assert dim.distance["ks"] == pytest.approx(ks_2samp(test, prod).statistic)
    assert dim.distance["wasserstein"] == pytest.approx(wasserstein_distance(test, prod))
    assert dim.extra.longer_than_tested == pytest.approx(float(np.mean(prod > test.max())))


def test_short_prompt_test_against_azure_code(lmb):
    az = raw_azure(AZ_CODE)
    steps = raw_lmb("LMBench_short_input_qps*.csv")
    t_in = np.concatenate([s["prompt_tokens"].cast(pl.Float64).to_numpy() for s in steps])
    t_out = np.concatenate([s["generation_tokens"].cast(pl.Float64).to_numpy() for s in steps])
    p_in, p_out = az["ContextTokens"].to_numpy().astype(float), az["GeneratedTokens"].to_numpy().astype(float)
    fid = assess_fidelity(lmb, load(AZ_CODE), run=SHORT)
    inp, out = fid.dimension("input_tokens"), fid.dimension("output_tokens")
    check_lengths(inp, t_in, p_in)
    check_lengths(out, t_out, p_out)
    assert q3(p_in)[0] == 1469.0 and t_in.max() == 223  # the "production's median is 1,469"
    assert inp.verdict == "differs" and fid.verdict == "differs"
    assert fid.headline.startswith("the limit was measured on prompts of median 76 tokens (75–223); "
                                   "production's median is 1,469 (P99 7,436); 85% of its prompts are longer")
    inside = (p_in >= t_in.min()) & (p_in <= t_in.max()) & (p_out >= t_out.min()) & (p_out <= t_out.max())
    assert fid.covered_share == pytest.approx(float(inside.mean()))  # 0.2 %: not the "100 %" the FOS row claimed
    assert fid.covered_share < 0.01
    # burstiness at the SLA's 1 s: each step's launch times alone (median over steps), production's starts
    frame = lmb.frame.filter(pl.col("run_id") == SHORT)
    b = burstiness_dimension(frame, load(AZ_CODE).frame, parse_sla(["p95(ttft) <= 1s"]))
    per_step = [v for v in (raw_iod(s["launch_time"].to_numpy()) for s in steps) if v is not None]
    assert b.test.index_of_dispersion == pytest.approx(float(np.median(per_step)))
    assert b.production.index_of_dispersion == pytest.approx(raw_iod(az["t"].to_numpy()), rel=1e-3)


def test_short_prompt_test_against_mooncake(lmb):
    m_in, m_out, m_t, hit = raw_mooncake()
    steps = raw_lmb("LMBench_short_input_qps*.csv")
    t_in = np.concatenate([s["prompt_tokens"].cast(pl.Float64).to_numpy() for s in steps])
    moon = load(MOON)
    fid = assess_fidelity(lmb, moon, run=SHORT)
    check_lengths(fid.dimension("input_tokens"), t_in, m_in)
    assert fid.dimension("input_tokens").extra.longer_than_tested == pytest.approx(1.0)  # every prompt
    assert m_in.min() / t_in.max() > 2  # the shortest production prompt is longer than twice the longest tested
    cache = fid.dimension("prefix_cache")
    assert cache.verdict == "unknown" and cache.production.token_hit_ratio == pytest.approx(hit)
    b = burstiness_dimension(lmb.frame.filter(pl.col("run_id") == SHORT), moon.frame, parse_sla(["p95(ttft) <= 1s"]))
    assert b.production.index_of_dispersion == pytest.approx(raw_iod(m_t))
    assert fid.covered_share == 0.0


def test_demo_pair(lmb):
    """ShareGPT against the Azure conversation trace: production side exact; the test's outputs are its
    completed requests (the CSV rows); its inputs also count the requests LMBenchmark dropped, which bearing
    puts back with the same prompt's length, so their range is the CSVs' range."""
    az = raw_azure(AZ_CONV)
    steps = raw_lmb("LMBench_sharegpt_output_*.csv")
    t_in = np.concatenate([s["prompt_tokens"].cast(pl.Float64).to_numpy() for s in steps])
    t_out = np.concatenate([s["generation_tokens"].cast(pl.Float64).to_numpy() for s in steps])
    p_in, p_out = az["ContextTokens"].to_numpy().astype(float), az["GeneratedTokens"].to_numpy().astype(float)
    fid = assess_fidelity(lmb, load(AZ_CONV), run=SHAREGPT)
    check_lengths(fid.dimension("output_tokens"), t_out, p_out)
    inp = fid.dimension("input_tokens")
    assert [inp.production.p50, inp.production.p90, inp.production.p99] == pytest.approx(q3(p_in))
    assert (inp.test.min, inp.test.max) == (t_in.min(), t_in.max())
    assert inp.test.n >= t_in.size
    assert inp.extra.longer_than_tested == pytest.approx(float(np.mean(p_in > t_in.max())))
    assert inp.verdict == "differs"  # 14 % of the conversation prompts are longer than any ShareGPT prompt sent
    assert inp.extra.longer_than_tested == pytest.approx(0.141, abs=0.001)
