"""The twin's paged KV policy (tokens present, LIFO preemption with recompute) and the decode context term.

Checked against hand-worked cases and against a naive loop written here that steps one iteration at a
time (the library's loop jumps over identical iterations; the two share no code), then calibration on a
paged server: the policy is chosen by the replay and the budget of tokens present is recovered.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from bearing_lib.twin.simulate import OK, ServerParams, simulate


def _p(**kw) -> ServerParams:
    base = dict(prefill_base_ms=4.0, prefill_ms_per_token=0.01, decode_base_ms=10.0, decode_ms_per_seq=0.0,
                kv_policy="paged")
    base.update(kw)
    return ServerParams(**base)


def test_paged_admits_by_tokens_present_where_reserve_waits():
    # budget 1000: two prompts of 400 with 150 outputs each. Reserve holds 550 + 550 > 1000, so the second
    # waits for the first to end; paged holds 401 + 401 at admission and both run together
    a, i, o = np.array([0.0, 0.0]), np.array([400, 400]), np.array([150, 150])
    res_r = simulate(_p(kv_policy="reserve", kv_budget_tokens=1000), a, i, o)
    res_p = simulate(_p(kv_budget_tokens=1000), a, i, o)
    assert res_r.first_token_s[1] >= res_r.end_s[0]
    assert res_p.first_token_s[1] == res_p.first_token_s[0]  # one prefill batch
    # together they reach 2 × (400 + 150) = 1100 > 1000 tokens: the newest is preempted before that
    assert int(res_p.preemptions) >= 1
    assert (res_p.status == OK).all()


def test_lifo_preemption_and_recompute_by_hand():
    # budget 220; A (100 in, 60 out) at 0, B (100 in, 60 out) at 0: one prefill of 200 tokens (4 + 2 = 6 ms),
    # each holds 101. Decode iterations (10 ms) add one token each: after k iterations 202 + 2k ≤ 220 → k = 9.
    # Before the 10th the newest (B, admitted last in the batch) is preempted holding 110 tokens; A runs alone
    # (111 + k ≤ 220) to its end: 59 decode iterations in all, ending at 6 + 590 = 596 ms.
    # B is then recomputed: prefill of 100 + 10 generated = 110 tokens (4 + 1.1 ms), which yields its 11th token,
    # then 49 decode iterations: end = 596 + 5.1 + 490 = 1091.1 ms; its first token stays at 6 ms.
    p = _p(kv_budget_tokens=220)
    r = simulate(p, np.array([0.0, 0.0]), np.array([100, 100]), np.array([60, 60]))
    assert r.first_token_s == pytest.approx([0.006, 0.006], abs=1e-12)
    assert r.end_s[0] == pytest.approx(0.596, abs=1e-9)
    assert r.end_s[1] == pytest.approx(1.0911, abs=1e-9)
    assert int(r.preemptions) == 1


def test_context_term_lengthens_iterations_as_the_context_grows():
    # one request of 1000 in, 4 out, 2 ms per 1k context tokens: decode iterations at contexts 1001, 1002, 1003
    p = _p(kv_policy="reserve", decode_ms_per_kctx=2.0)
    r = simulate(p, np.array([0.0]), np.array([1000]), np.array([4]))
    first = 0.004 + 0.01
    it = [0.010 + 0.002 * c / 1000 for c in (1001, 1002, 1003)]
    assert r.first_token_s[0] == pytest.approx(first, abs=1e-12)
    assert r.end_s[0] == pytest.approx(first + sum(it), abs=1e-12)


def _naive(p: ServerParams, a, inp, out, cac):
    """One iteration per loop turn: the documented model, written again without event jumping."""
    n = len(a)
    first, end = [math.nan] * n, [math.nan] * n
    gen, queue, running = [0] * n, [], []  # running in admission order
    t, nxt, kv = 0.0, 0, 0.0
    budget = p.kv_budget_tokens if p.kv_budget_tokens is not None else math.inf
    slots = p.max_num_seqs if p.max_num_seqs is not None else math.inf
    rto = p.request_timeout_s if p.request_timeout_s is not None else math.inf
    timed_out = [False] * n
    while nxt < n or queue or running:
        while nxt < n and a[nxt] <= t:
            queue.append(nxt)
            nxt += 1
        # the request deadline, checked on every request at every iteration boundary
        for j in [j for j in queue if t - a[j] >= rto]:
            queue.remove(j)
            timed_out[j], first[j], end[j] = True, math.nan, a[j] + rto
        for j in [j for j in running if t - a[j] >= rto]:
            running.remove(j)
            kv -= inp[j] + gen[j]
            timed_out[j], first[j], end[j] = True, math.nan, a[j] + rto
        pre = False
        while running and kv + len(running) > budget:
            j = running.pop()
            kv -= inp[j] + gen[j]
            queue.insert(0, j)
            pre = True
        batch, btok = [], 0.0
        while (queue and not pre and len(running) + len(batch) < slots
               and kv + inp[queue[0]] + gen[queue[0]] + 1 <= budget):
            j = queue.pop(0)
            batch.append(j)
            btok += inp[j] - cac[j] + gen[j]
            kv += inp[j] + gen[j] + 1
        if batch:
            t += (p.prefill_base_ms + p.prefill_ms_per_token * btok) / 1000
            for j in batch:
                if math.isnan(first[j]):
                    first[j] = t
                gen[j] += 1
                if gen[j] >= out[j]:
                    end[j] = t
                    kv -= inp[j] + gen[j]
                else:
                    running.append(j)
            continue
        if not running:
            if nxt < n:
                t = max(t, a[nxt])
            continue
        ctx = sum(inp[j] + gen[j] for j in running)
        t += (p.decode_base_ms + p.decode_ms_per_seq * len(running) + p.decode_ms_per_kctx * ctx / 1000) / 1000
        for j in list(running):
            gen[j] += 1
            kv += 1
            if gen[j] >= out[j]:
                end[j] = t
                running.remove(j)
                kv -= inp[j] + gen[j]
    if any(timed_out):
        return np.array(first), np.array(end), np.array(timed_out)
    return np.array(first), np.array(end)


@pytest.mark.parametrize("kctx", [0.0, 1.5])
@pytest.mark.parametrize("budget", [6_000, 20_000])
def test_jumping_loop_matches_the_naive_loop(budget, kctx):
    rng = np.random.default_rng(budget + int(kctx * 10))
    a = np.sort(rng.uniform(0, 4, 120))
    inp = rng.integers(50, 800, a.size)
    out = rng.integers(2, 120, a.size)
    cac = np.where(rng.random(a.size) < 0.3, inp // 2, 0)
    p = _p(kv_budget_tokens=float(budget), max_num_seqs=24, decode_ms_per_seq=0.3, decode_ms_per_kctx=kctx)
    got = simulate(p, a, inp, out, cac)
    f_ref, e_ref = _naive(p, a.tolist(), inp.tolist(), out.tolist(), cac.tolist())
    assert (got.status == OK).all()
    np.testing.assert_allclose(got.first_token_s, f_ref, atol=1e-9)
    np.testing.assert_allclose(got.end_s, e_ref, atol=1e-9)
    if budget == 6_000:
        assert int(got.preemptions) > 0  # the case exercises preemption


@pytest.mark.parametrize("budget", [6_000.0, None])
def test_request_timeout_aborts_queued_and_running_requests_as_the_naive_loop_does(budget):
    # overloaded on purpose (120 requests in 2 s, 12 slots): requests time out waiting, while preempted and
    # while decoding; every one frees its slot and KV at its deadline, arrival + 1.5 s
    rng = np.random.default_rng(11)
    a = np.sort(rng.uniform(0, 2, 120))
    inp = rng.integers(50, 800, a.size)
    out = rng.integers(2, 200, a.size)
    cac = np.zeros(a.size, dtype=np.int64)
    p = _p(kv_budget_tokens=budget, max_num_seqs=12, decode_ms_per_seq=0.3, request_timeout_s=1.5)
    got = simulate(p, a, inp, out, cac)
    f_ref, e_ref, tmo_ref = _naive(p, a.tolist(), inp.tolist(), out.tolist(), cac.tolist())
    np.testing.assert_array_equal(got.status == 1, tmo_ref)
    assert 10 < int(tmo_ref.sum()) < 110  # some time out, some finish
    np.testing.assert_allclose(got.first_token_s, f_ref, atol=1e-9)
    np.testing.assert_allclose(got.end_s, e_ref, atol=1e-9)
    np.testing.assert_allclose(got.end_s[tmo_ref], a[tmo_ref] + 1.5, atol=1e-12)
    ok = got.status == OK
    assert np.all(got.end_s[ok] - a[ok] < 1.5 + 0.05)  # no success outlives the deadline (by over an iteration)


def test_a_request_that_outlives_the_deadline_is_aborted_mid_decode_and_frees_its_slot():
    # one slot; A (100 in, 1000 out) at 0 would decode for 10 s; the deadline (2 s) aborts it at the first
    # iteration boundary at or after 2 s; B (100 in, 5 out), queued behind it from 0.5 s, then runs:
    # prefill 4 + 1 = 5 ms, first token at the abort + 5 ms, then 4 decode iterations of 10 ms
    p = _p(kv_policy="reserve", max_num_seqs=1, request_timeout_s=2.0)
    r = simulate(p, np.array([0.0, 0.5]), np.array([100, 100]), np.array([1000, 5]))
    assert list(r.status) == [1, OK]
    assert r.end_s[0] == pytest.approx(2.0)
    # A's first token at 5 ms, then 10 ms iterations: the first boundary at or after 2 s is 2.005 s
    assert r.first_token_s[1] == pytest.approx(2.005 + 0.005, abs=1e-9)
    assert r.end_s[1] == pytest.approx(2.010 + 0.040, abs=1e-9)


def _paged_test(budget: float, seed: int = 5):
    """A stepped test of a paged server (the twin's simulator, checked above against the naive loop)."""
    from bearing_lib.data.provenance import Provenance
    from bearing_lib.data.trace import RequestTrace, conform, validate

    p = _p(prefill_base_ms=5.0, prefill_ms_per_token=0.02, decode_base_ms=12.0, decode_ms_per_seq=0.15,
           max_num_seqs=256, kv_budget_tokens=budget)
    rng = np.random.default_rng(seed)
    rates = [2.0, 4.0, 6.0, 8.0, 10.0, 12.0]
    arr, step, load = [], [], []
    for k, r in enumerate(rates):
        m = rng.poisson(r * 120)
        arr.append(np.sort(rng.uniform(k * 120, (k + 1) * 120, m)))
        step.append(np.full(m, k))
        load.append(np.full(m, r))
    a = np.concatenate(arr)
    inp = np.clip(np.rint(np.exp(rng.normal(math.log(1500), 0.5, a.size))), 200, 6000).astype(np.int64)
    out = np.clip(np.rint(np.exp(rng.normal(math.log(200), 0.6, a.size))), 8, 1000).astype(np.int64)
    res = simulate(p, a, inp, out)
    df = pl.DataFrame({
        "request_id": [f"r{i}" for i in range(a.size)], "start_s": a, "end_s": res.end_s,
        "ttft_ms": (res.first_token_s - a) * 1000.0, "latency_ms": (res.end_s - a) * 1000.0,
        "input_tokens": inp, "output_tokens": out, "cached_tokens": np.zeros(a.size, dtype=np.int64),
        "status": ["ok"] * a.size, "run_id": "paged", "step": np.concatenate(step),
        "offered_load": np.concatenate(load), "offered_load_unit": "rps",
    })
    prov = Provenance(source="SIMULATED paged server", format="test", tool="tests.twin.test_paged", sha256="0" * 64,
                      time_origin="relative")
    return RequestTrace(frame=validate(conform(df), prov), provenance=prov), res


def test_calibration_identifies_paged_kv_and_its_budget():
    from bearing_lib.twin import calibrate

    trace, res = _paged_test(60_000)
    assert int(res.preemptions) > 50  # the test ran into the budget
    tw = calibrate(trace, n_boot=0)
    assert tw.kv_policy == "paged", tw.kv_policy_note
    kv = tw.param("kv_budget_tokens")
    assert kv.value == pytest.approx(60_000, rel=0.05)
    assert tw.param("decode_base_ms").value == pytest.approx(12.0, rel=0.05)
    # preempted requests carry their wait in their time per token; the median holds most of it off, not all
    assert tw.param("decode_ms_per_seq").value == pytest.approx(0.15, rel=0.25)
    from bearing_lib.twin import validate

    v = validate(tw, trace, "p99(ttft) <= 2s")
    assert v.trusted, v.reasons


def test_reserve_server_keeps_reserve(oracle_kv_starved=("kv_starved", "rag")):
    from bearing_lib.twin import calibrate
    from tests.twin.conftest import oracle_trace

    tw = calibrate(oracle_trace(*oracle_kv_starved), n_boot=0)
    assert tw.kv_policy == "reserve", tw.kv_policy_note
    assert tw.param("kv_budget_tokens").value == pytest.approx(100_000, rel=0.03)


def test_known_engine_settings_are_used_and_checked():
    from bearing_lib.common.errors import ParameterError
    from bearing_lib.twin import calibrate
    from tests.twin.conftest import oracle_trace

    tr = oracle_trace("small", "chat")
    tw = calibrate(tr, n_boot=0, known={"kv_budget_tokens": 150_000, "kv_policy": "reserve"})
    kv = tw.param("kv_budget_tokens")
    assert kv.identified and kv.value == 150_000 and kv.note.startswith("given")
    assert tw.given == {"kv_budget_tokens": 150_000, "kv_policy": "reserve"}
    with pytest.raises(ParameterError, match="ran"):  # 64 ran at once in that test
        calibrate(tr, n_boot=0, known={"max_num_seqs": 16})
    with pytest.raises(ParameterError, match="unknown engine setting"):
        calibrate(tr, n_boot=0, known={"gpu": 1})


def _deadline_test(rto: float = 20.0, seed: int = 8):
    """A stepped test of a slot-bound server with a deadline in front of it, written the way LMBenchmark
    writes one: a request the deadline aborted is kept only as a failed row with its start (no end, TTFT or
    output), the rows the loader puts back."""
    from bearing_lib.data.provenance import Provenance
    from bearing_lib.data.trace import RequestTrace, conform, validate

    p = _p(kv_policy="reserve", prefill_base_ms=5.0, prefill_ms_per_token=0.02, decode_base_ms=40.0,
           decode_ms_per_seq=0.5, max_num_seqs=32, request_timeout_s=rto)
    rng = np.random.default_rng(seed)
    rates = [0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5]
    arr, step, load = [], [], []
    t0 = 0.0
    for k, r in enumerate(rates):
        m = rng.poisson(r * 150)
        arr.append(np.sort(rng.uniform(t0, t0 + 150, m)))
        step.append(np.full(m, k))
        load.append(np.full(m, r))
        t0 += 150 + 3 * rto  # the next step starts once the last one drained (as LMBenchmark waits)
    a = np.concatenate(arr)
    inp = np.clip(np.rint(np.exp(rng.normal(math.log(800), 0.5, a.size))), 50, 4000).astype(np.int64)
    out = np.clip(np.rint(np.exp(rng.normal(math.log(200), 0.7, a.size))), 8, 1500).astype(np.int64)
    res = simulate(p, a, inp, out)
    ok = res.status == OK
    df = pl.DataFrame({
        "request_id": [f"r{i}" for i in range(a.size)], "start_s": a,
        "end_s": np.where(ok, res.end_s, np.nan),
        "ttft_ms": np.where(ok, (res.first_token_s - a) * 1000.0, np.nan),
        "latency_ms": np.where(ok, (res.end_s - a) * 1000.0, np.nan),
        "input_tokens": inp, "output_tokens": np.where(ok, out, -1),
        "status": np.where(ok, "ok", "error"), "run_id": "deadline", "step": np.concatenate(step),
        "offered_load": np.concatenate(load), "offered_load_unit": "rps",
    }).with_columns(pl.col("end_s", "ttft_ms", "latency_ms").fill_nan(None),
                    pl.when(pl.col("output_tokens") >= 0).then(pl.col("output_tokens")).alias("output_tokens"))
    prov = Provenance(source="SIMULATED server behind a deadline", format="test", tool="tests.twin.test_paged",
                      sha256="0" * 64, time_origin="relative")
    return RequestTrace(frame=validate(conform(df), prov), provenance=prov), res, p


def test_calibration_finds_the_deadline_the_lost_requests_ran_into_and_replays_them():
    from bearing_lib.twin import calibrate, validate

    trace, res, truth = _deadline_test()
    lost = int((res.status != OK).sum())
    assert lost > 100  # the top steps overload the 32 slots: many requests run into the 20 s deadline
    tw = calibrate(trace, n_boot=0)
    rto = tw.param("request_timeout_s")
    assert rto.identified
    # the highest completed latency: within the 5 % band below the true deadline, or past it by less than the
    # one decode iteration (~56 ms at 32 running) that straddles it (a request finishing in it completes)
    assert 0.95 * 20.0 <= rto.value <= 20.0 + 0.06
    assert tw.param("decode_base_ms").value == pytest.approx(40.0, rel=0.05)
    v = validate(tw, trace, "p95(ttft) <= 2s and error_rate <= 5%")
    thr = [r.predicted["throughput_rps"] / r.measured["throughput_rps"] - 1 for r in v.rows if not r.held_out]
    assert max(abs(e) for e in thr) <= 0.10, thr
    assert v.trusted, v.reasons


def test_without_lost_requests_no_deadline_is_invented():
    from bearing_lib.twin import calibrate

    trace, _, _ = _deadline_test()
    kept = trace.frame.filter(pl.col("status") == "ok")
    from bearing_lib.data.trace import RequestTrace

    tw = calibrate(RequestTrace(frame=kept, provenance=trace.provenance), n_boot=0)
    assert tw.param("request_timeout_s").value is None
    assert not tw.param("request_timeout_s").identified


def test_the_idle_server_timeout_share_matches_a_hand_count():
    from bearing_lib.twin.mix import from_arrays
    from bearing_lib.twin.predict import idle_timeout_share

    # decode 40 ms (+0.5 per seq) a token, prefill 5 ms + 0.02 ms/token, no overhead: 100 in / o out alone takes
    # 7 ms + (o − 1) × 40.5 ms; the 20 s deadline is passed from o − 1 ≥ (20000 − 7) / 40.5 = 493.7, i.e. o ≥ 495
    p = _p(kv_policy="reserve", prefill_base_ms=5.0, prefill_ms_per_token=0.02, decode_base_ms=40.0,
           decode_ms_per_seq=0.5, request_timeout_s=20.0)
    mix = from_arrays("m", [100] * 4, [494, 495, 10, 2000])
    assert idle_timeout_share(mix, p) == pytest.approx(0.5)


def test_the_deadline_what_if_lifts_the_timeout_floor_through_library_cli_and_notebook_call(tmp_path):
    """With the 20 s deadline of the test, a long-output mix fails on timeouts (flag "deadline:"); the what-if
    without it (library, `bearing twin predict --request-timeout none`, the notebook's what_if) carries more."""
    import json

    from typer.testing import CliRunner

    from bearing_lib.cli.main import app
    from bearing_lib.twin import calibrate, validate
    from bearing_lib.twin.mix import from_arrays
    from bearing_lib.twin.predict import SearchOptions, predict
    from bearing_lib.twin.section import what_if

    trace, _, _ = _deadline_test()
    tw = calibrate(trace, n_boot=0)
    tw.validation = validate(tw, trace, "p95(ttft) <= 2s and error_rate <= 5%")
    # 4 % of this mix needs 600 output tokens: 600 × 40.5 ms ≈ 24 s alone, past the 20 s deadline
    mix = from_arrays("long tail", [800] * 96 + [800] * 4, [200] * 96 + [600] * 4)
    opt = SearchOptions(n_draws=0, duration_s=900.0)
    sla = "p95(ttft) <= 2s and error_rate <= 2%"
    kept = predict(tw, mix, sla, options=opt)
    lifted = predict(tw, mix, sla, options=opt, request_timeout=None)
    assert any(f.startswith("deadline: 4.0%") for f in kept.flags)
    assert kept.q_ult.value is None or kept.q_ult.bound == "upper"  # 4 % > 2 % at any load: no rate passes
    assert lifted.q_ult.value > 0.5 and lifted.flags[0].startswith("what-if: the request timeout of the test")
    twin_json = tmp_path / "twin.json"
    twin_json.write_text(json.dumps(tw.to_dict()))
    mixes = tmp_path / "mixes.yaml"
    mixes.write_text("chat:\n  input_tokens: {median: 800, sigma: 0.01}\n  output_tokens: {median: 200, sigma: 0.01}\n")
    r = CliRunner().invoke(app, ["twin", "predict", str(twin_json), "--mixes", str(mixes), "--sla", sla,
                                 "--request-timeout", "none", "--draws", "0", "--json", str(tmp_path / "p.json")])
    assert r.exit_code == 0, r.output
    doc = json.loads((tmp_path / "p.json").read_text())
    assert doc["predictions"][0]["flags"][0].startswith("what-if: the request timeout of the test (20.0 s) lifted")
    r = CliRunner().invoke(app, ["twin", "predict", str(twin_json), "--mixes", str(mixes), "--sla", sla,
                                 "--request-timeout", "soon", "--json", str(tmp_path / "q.json")])
    assert r.exit_code == 1 and "--request-timeout 'soon'" in r.output
    p = what_if(tw, trace, sla, request_timeout="30", n_draws=0)
    assert p.flags[0] == "what-if: request timeout 30 s (the test's: 20.0 s)"


def test_one_parser_reads_every_request_timeout_setting():
    from bearing_lib.common.errors import ParameterError
    from bearing_lib.twin import calibrate
    from bearing_lib.twin.predict import KEEP, parse_request_timeout

    assert parse_request_timeout("30") == 30.0 and parse_request_timeout(12) == 12.0
    assert parse_request_timeout("none") is None and parse_request_timeout(None) is None
    assert parse_request_timeout("OFF") is None and parse_request_timeout("keep") == KEEP
    for bad in ("-5", "0", "soon", "inf"):
        with pytest.raises(ParameterError, match="expected positive seconds"):
            parse_request_timeout(bad)
    trace, _, _ = _deadline_test()
    tw = calibrate(trace, n_boot=0, known={"request_timeout_s": "none"})
    assert tw.param("request_timeout_s").value is None and tw.param("request_timeout_s").note.startswith("given")
    with pytest.raises(ParameterError, match="not an engine setting"):
        calibrate(trace, n_boot=0, known={"request_timeout_s": "keep"})
