"""Cost anomaly index on hand-made requests (expected values computed by hand)."""

from __future__ import annotations

import polars as pl
import pytest

from bearing_lib.common.errors import SchemaError
from bearing_lib.limits.cost import DEFAULT_PREFILL_WEIGHT, cost_anomaly_index


def _requests() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "run_id": ["r"] * 6,
            "step": [0, 0, 0, 1, 1, 1],
            "mix": ["a"] * 6,
            "status": ["ok", "ok", "error", "ok", "timeout", "ok"],
            "input_tokens": [800, 1600, 800, 800, 800, 800],
            "cached_tokens": [0, 800, None, 400, 0, 0],
            "output_tokens": [100, 50, 20, 100, None, 200],
            "ttft_ms": [40.0, 60.0, None, 2000.0, None, 90.0],
            "slow": [False, False, False, True, False, None],
        }
    )


def test_token_model_by_hand():
    out = cost_anomaly_index(_requests(), "slow")
    w = DEFAULT_PREFILL_WEIGHT  # 1/8
    # step 0: costs 800w+100=200, 800w+50=150, errored with 20 output tokens 800w+20=120
    s0 = out.filter(pl.col("step") == 0).row(0, named=True)
    assert s0["compute_total"] == pytest.approx(200 + 150 + 120)
    assert s0["compute_wasted"] == pytest.approx(120)
    assert s0["cost_anomaly_index"] == pytest.approx(120 / 470)
    assert s0["n_wasted"] == 1
    # step 1: 400w+100=150 (slow: wasted), the queue timeout never ran (0), 800w+200=300;
    # the null violation flag counts as not violating
    s1 = out.filter(pl.col("step") == 1).row(0, named=True)
    assert s1["compute_total"] == pytest.approx(150 + 0 + 300)
    assert s1["compute_wasted"] == pytest.approx(150)
    assert s1["n_wasted"] == 2 and s1["n_requests"] == 3
    assert "0.125 x (input - cached) + output" in s1["compute_model"]
    assert w == 0.125


def test_expression_weight_and_measured_column():
    df = _requests()
    out = cost_anomaly_index(df, pl.col("ttft_ms") > 1000, by=["run_id"], prefill_weight=0.0)
    # weight 0: only output tokens: total 100+50+20+100+0+200 = 470; wasted 20 (error) + 100 (slow)
    assert out["cost_anomaly_index"][0] == pytest.approx(120 / 470)
    m = df.with_columns(pl.Series("gpu_ms", [10.0, 10.0, 5.0, 20.0, 0.0, 15.0]))
    out_m = cost_anomaly_index(m, None, by=[], measured_column="gpu_ms")
    assert out_m["cost_anomaly_index"][0] == pytest.approx(5.0 / 60.0)
    assert out_m["compute_model"][0] == "measured: gpu_ms"


def test_no_compute_is_null_and_errors_are_clear():
    df = pl.DataFrame(
        {"status": ["timeout"], "input_tokens": [10], "cached_tokens": [0], "output_tokens": [None], "ttft_ms": [None]}
    )
    assert cost_anomaly_index(df)["cost_anomaly_index"][0] is None
    with pytest.raises(SchemaError, match="violation column 'nope'"):
        cost_anomaly_index(_requests(), "nope")
    with pytest.raises(SchemaError, match="input_tokens"):
        cost_anomaly_index(pl.DataFrame({"status": ["ok"]}))
