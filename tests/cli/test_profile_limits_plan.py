"""End to end on the command line: `bearing profile`, `bearing limits`, then `bearing plan` from the two
JSON files alone (no --trace) gives the CBU, elasticity-replay and memory sections.

Inputs are REAL and bundled: the Azure 2023 conversation trace (CC-BY-4.0) and the LMBenchmark
llm-d exp-2 QPS sweep of Llama-3-70B on vLLM, 2 replicas (Apache-2.0). Expected values are computed
in the test: per-minute counts from stdlib ``csv`` + ``datetime`` (UTC minutes, empty minutes zero,
partial first and last minutes left out), sequence lengths with ``numpy.quantile`` (linear), the
limit read from the limits JSON with ``json``.
"""

from __future__ import annotations

import csv
import json
import math
from collections import Counter
from datetime import UTC, datetime

import numpy as np
import pytest
from typer.testing import CliRunner

from bearing_lib.cli.main import app

CONV = "traces/azure-llm-inference-2023/AzureLLMInferenceTrace_conv.csv"
LMBENCH = "loadtests/lmbenchmark-llm-d-exp2/vllm-70b-2replicas"
RUN = "vllm-70b-2replicas/short_input"


@pytest.mark.slow
def test_plan_from_profile_and_limits_json_alone(bundled, tmp_path):
    path = bundled(CONV)
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    minutes = Counter(
        math.floor(datetime.strptime(r["TIMESTAMP"][:26], "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=UTC).timestamp()
                   / 60) for r in rows)
    counts = [minutes.get(k, 0) for k in range(min(minutes) + 1, max(minutes))]
    seq = np.array([int(r["ContextTokens"]) + int(r["GeneratedTokens"]) for r in rows], dtype=float)

    runner = CliRunner()
    profile_json, limits_json, plan_json = tmp_path / "p.json", tmp_path / "l.json", tmp_path / "plan.json"
    r = runner.invoke(app, ["profile", str(path), "--json", str(profile_json), "--mixes", "none"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["limits", str(bundled(LMBENCH)), "--sla", "p99(ttft) <= 2s", "--mixes", "none",
                            "--n-boot", "50", "--seed", "1", "--json", str(limits_json)])
    assert r.exit_code == 0, r.output
    q = next(m["q_ult"] for m in json.loads(limits_json.read_text())["mixes"] if m["run_id"] == RUN)
    r = runner.invoke(app, ["plan", "--limits", str(limits_json), "--profile", str(profile_json), "--run", RUN,
                            "--tested-instances", "2", "--model", "llama-3.1-70b", "--gpu-mem-gib", "80",
                            "--gpu-count", "4", "--concurrency", "16", "--json", str(plan_json)])
    assert r.exit_code == 0, r.output
    d = json.loads(plan_json.read_text())

    # CBU per minute against the allowable rate Q_ult / 1.5 (standard tier)
    allowable = q["throughput_rps"] / 1.5
    assert d["allowable_rps"] == pytest.approx(allowable)
    assert d["cbu"]["n_minutes"] == len(counts) == 58
    assert d["cbu"]["max"] == pytest.approx(max(counts) / 60 / allowable)
    assert d["cbu"]["n_above"] == sum(c / 60 / allowable > 0.8 for c in counts)
    # the replay runs on the same 58 minutes, one instance = half the two-replica limit
    assert d["elasticity"]["n_minutes"] == 58
    assert d["elasticity"]["per_instance_rps"] == pytest.approx(q["throughput_rps"] / 2)
    # memory from the profile's seq_len
    m = d["memory"]
    assert m["seq_len"]["source"] == "profile JSON seq_len" and m["seq_len"]["n"] == seq.size == 19_366
    for basis, v in (("p50", np.quantile(seq, 0.5)), ("p99", np.quantile(seq, 0.99)), ("max", seq.max()),
                     ("mean", seq.mean())):
        row = next(x for x in m["rows"] if x["basis"] == basis)
        assert row["seq_len"] == pytest.approx(float(v)), basis
    assert m["concurrency"] == 16 and m["concurrency_basis"] == "given"
    assert "per-minute series" not in r.output and "not available" not in r.output.split("memory:")[1].split("\n")[0]
