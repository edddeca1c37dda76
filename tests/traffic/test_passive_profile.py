"""`bearing profile --passive-sla`: the passive limit of a production trace that carries latency.

Truth: the simulated M/M/1-like server of tests/twin/conftest.py (sojourn ~ Exp(mu - lambda), so the
P99 meets 20 s at lambda* = mu - ln(100) / 20), run as production traffic (no load-test steps); the
CLI's figure is the library's own fit on the same file, within the band docs/twin.md states."""

from __future__ import annotations

import json
import math

import numpy as np
import polars as pl
from typer.testing import CliRunner

from bearing_lib.cli.main import app
from bearing_lib.loaders.canonical import write_trace
from bearing_lib.twin.passive import passive_limit
from tests.twin.conftest import mm1_trace

runner = CliRunner()


def test_profile_passive_limit_of_mm1_production(tmp_path):
    tr = mm1_trace(1.0, list(np.linspace(0.2, 0.7, 12)), 1200.0, seed=5, noise_ms=1.0)
    o1 = tr.frame["output_tokens"].to_numpy() - 1.0
    truth = 1.0 / (0.002 + 0.010 * o1.mean()) - math.log(100.0) / 20.0
    tr.frame = tr.frame.with_columns(pl.lit(None, pl.Int64).alias("step"),
                                     pl.lit(None, pl.Float64).alias("offered_load"),
                                     pl.lit(None, pl.String).alias("offered_load_unit"))
    prod = write_trace(tr, tmp_path / "prod.parquet")
    out = tmp_path / "profile.json"
    r = runner.invoke(app, ["profile", str(prod), "--passive-sla", "p99(latency) <= 20s", "--passive-window-s", "300",
                            "--json", str(out)])
    assert r.exit_code == 0, r.output
    assert "passive:     passive (from production latency vs load) limit under p99(latency) <= 20s" in r.output
    d = json.loads(out.read_text())["passive_limit"]
    lib = passive_limit(tr, "p99(latency) <= 20s", window_s=300.0)
    assert d["q_ult"]["value"] == lib.q_ult.value and d["extrapolated"] is True
    assert -0.05 <= d["q_ult"]["value"] / truth - 1.0 <= 0.35


def test_passive_needs_requests_with_latency(tmp_path):
    doc = {"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"__name__": "vllm:request_success_total"}, "values": [[1796217600 + 15 * k, str(k)]
                                                                          for k in range(9)]}]}}
    p = tmp_path / "q.json"
    p.write_text(json.dumps(doc))
    r = runner.invoke(app, ["profile", str(p), "--passive-sla", "p99(latency) <= 20s", "--json", str(tmp_path / "o")])
    assert r.exit_code == 1 and "needs per-request latency" in r.output
