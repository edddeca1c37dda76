"""Calibration recovers known parameters: the oracle's configs, and an M/M/1-like server's μ."""

from __future__ import annotations

import json
import math

import numpy as np
import polars as pl
import pytest

from bearing_lib.common.errors import InsufficientDataError, SchemaError
from bearing_lib.twin import Twin, calibrate
from tests.twin.conftest import mm1_trace, oracle_trace


def test_recovers_the_oracle_small_server_from_a_chat_test():
    from tests.oracle.configs import SERVERS

    cfg = SERVERS["small"]
    tw = calibrate(oracle_trace("small", "chat"))
    p = {q.name: q for q in tw.params}
    assert p["decode_base_ms"].value == pytest.approx(cfg.decode_base_ms, rel=0.02)
    assert p["decode_ms_per_seq"].value == pytest.approx(cfg.decode_ms_per_seq, rel=0.03)
    assert p["prefill_ms_per_token"].value == pytest.approx(cfg.prefill_ms_per_token, rel=0.05)
    assert p["prefill_base_ms"].value == pytest.approx(cfg.prefill_base_ms, abs=1.0)
    for name in ("decode_base_ms", "decode_ms_per_seq", "prefill_ms_per_token"):
        lo, hi = p[name].ci95
        assert lo <= p[name].value <= hi
    # 64 slots were reached with a queue (the top steps are above the limit); the KV budget (150k) was not
    assert p["max_num_seqs"].identified and p["max_num_seqs"].value == cfg.max_num_seqs
    assert not p["kv_budget_tokens"].identified and p["kv_budget_tokens"].bound == "lower"
    assert p["kv_budget_tokens"].value < cfg.kv_budget_tokens
    assert p["queue_timeout_s"].value == pytest.approx(cfg.queue_timeout_s, abs=0.05)
    assert any("kv_budget_tokens" in n for n in tw.notes)


def test_a_kv_bound_test_identifies_the_budget_not_the_slots():
    from tests.oracle.configs import SERVERS

    cfg = SERVERS["kv_starved"]
    tw = calibrate(oracle_trace("kv_starved", "rag"))
    kv, ms = tw.param("kv_budget_tokens"), tw.param("max_num_seqs")
    assert kv.identified and kv.value == pytest.approx(cfg.kv_budget_tokens, rel=0.03)
    assert kv.steps and max(kv.steps) == 9  # the overloaded top steps showed it
    assert not ms.identified and ms.bound == "lower" and ms.value < cfg.max_num_seqs


def test_mm1_like_trace_recovers_mu_inside_its_ci():
    mu = 1.0
    tr = mm1_trace(mu, [0.3, 0.45, 0.6, 0.75, 0.9, 1.05, 1.2, 1.4], 600.0, seed=11)
    tw = calibrate(tr, n_boot=300, seed=1)
    assert tw.param("max_num_seqs").value == 1 and tw.param("max_num_seqs").identified
    assert not tw.param("decode_ms_per_seq").identified  # one request at a time: the batch never varies
    # μ of the requests served: 1 / (2 ms + 10 ms × mean(o − 1)), computed from the generator's constants
    o1 = tr.frame["output_tokens"].to_numpy() - 1.0
    mu_real = 1.0 / (0.002 + 0.010 * o1.mean())
    draws = np.asarray(tw.draws)
    mus = 1.0 / ((draws[:, 0] + draws[:, 1] * 100 + (draws[:, 2] + draws[:, 3]) * o1.mean()) / 1000.0)
    v = tw.values()
    mu_hat = 1.0 / ((v["prefill_base_ms"] + v["prefill_ms_per_token"] * 100 + v["decode_base_ms"] * o1.mean()) / 1000)
    lo, hi = np.percentile(mus, [2.5, 97.5])
    assert lo <= mu_real <= hi
    assert mu_hat == pytest.approx(mu_real, rel=0.01)
    assert mu_real == pytest.approx(mu, rel=0.05)  # and the served requests are representative of μ


def test_json_round_trip_is_exact():
    tw = calibrate(oracle_trace("small", "rag"), n_boot=30)
    d = json.loads(json.dumps(tw.to_dict()))
    assert d["kind"] == "twin"
    assert Twin.from_dict(d).to_dict() == tw.to_dict()


def test_bad_twin_document_lists_every_problem():
    tw = calibrate(oracle_trace("small", "rag"), n_boot=0)
    d = json.loads(json.dumps(tw.to_dict()))
    d["n_requests"] = "many"
    d["params"][0]["identified"] = "perhaps"
    with pytest.raises(SchemaError) as e:
        Twin.from_dict(d)
    assert "2 problem(s)" in str(e.value) and "n_requests" in str(e.value)


def test_aggregate_only_or_tiny_input_is_refused_clearly():
    tr = oracle_trace("small", "chat")
    with pytest.raises(InsufficientDataError, match="ttft_ms") as e:
        calibrate(tr.frame.with_columns(pl.lit(None, pl.Float64).alias("ttft_ms")))
    # per-request rows without TTFT are not an aggregate-only test (Vegeta's file: a new user's case, round 21)
    assert "the twin needs each request's ttft_ms, and the requests carry none" in str(e.value)
    assert "aggregate-only" not in str(e.value)
    with pytest.raises(InsufficientDataError, match="an aggregate-only load test cannot calibrate it"):
        calibrate(tr.frame.with_columns(pl.lit(None, pl.Float64).alias("ttft_ms"),
                                        pl.lit(None, pl.Float64).alias("start_s")))
    with pytest.raises(InsufficientDataError, match="at least 50"):
        calibrate(tr.frame.head(20))


def test_each_parameter_says_which_steps_identified_it():
    tw = calibrate(oracle_trace("small", "chat"), n_boot=0)
    slots = tw.param("max_num_seqs")
    # the slots bind only above the limit (≈ steps 6-9 of 0.4-1.6 × truth)
    assert slots.steps and min(slots.steps) >= 5
    assert tw.param("decode_base_ms").steps == list(range(10))
    assert math.isnan(tw.param("max_batched_tokens").ci95[0] or math.nan)
