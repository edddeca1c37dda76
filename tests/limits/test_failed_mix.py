"""Failed requests belong to the mix their request would have been in (SYNTHETIC stepped test).

Every request has 200 input tokens; half ask for 50 output tokens ("short"), half for 1,000
("long"). Only long requests fail: half of them from the third step (4 req/s) on, with no output
(0 tokens) and their requested length kept in ``requested_output_tokens``. The truth is therefore
known: the long mix fails at 4 req/s (last pass 2 req/s), the short mix never fails. Judging a
failure by the 0 output it never produced would move the failures into the short mix instead.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from bearing_lib.data.mixes import Mix, MixSpec, auto_mixes, mix_output_expr
from bearing_lib.limits.fit import fit_limits
from bearing_lib.loaders import load
from tests.limits.synth import make_trace

RATES = [1.0, 2.0, 4.0, 8.0]
STEP_S = 200.0
SPEC = MixSpec((Mix("short", {"output_tokens": (0.0, 256.0)}), Mix("long", {"output_tokens": (256.0, math.inf)})))


def _frame(requested: bool = True) -> pl.DataFrame:
    rows = []
    t0 = 0.0
    for k, lam in enumerate(RATES):
        n = int(lam * STEP_S)
        for i in range(n):
            long = i % 2 == 1
            fails = long and k >= 2 and (i // 2) % 2 == 0  # half of the long requests from 4 req/s on
            rows.append({
                "request_id": f"{k}-{i}", "start_s": t0 + i / lam, "end_s": t0 + i / lam + 0.1,
                "latency_ms": 100.0, "ttft_ms": 20.0, "input_tokens": 200,
                "output_tokens": 0 if fails else (1000 if long else 50),
                "requested_output_tokens": (1000 if long else 50) if requested else None,
                "status": "error" if fails else "ok", "run_id": "run", "step": k, "offered_load": lam,
                "offered_load_unit": "rps",
            })
        t0 += STEP_S
    return pl.DataFrame(rows, schema_overrides={"requested_output_tokens": pl.Int64})


def test_a_failed_request_is_judged_on_its_requested_output():
    f = _frame()
    labelled = SPEC.assign(f)
    failed = labelled.filter(pl.col("status") == "error")
    assert failed.height == sum(int(r * STEP_S) // 4 for r in RATES[2:])  # 200 + 400
    assert set(failed["mix"]) == {"long"}
    assert labelled.filter(pl.col("mix") == "long").height == f.height // 2
    # without status the frame is judged on output_tokens as before
    out, unknown = mix_output_expr(["output_tokens"])
    assert f.select(out).to_series().to_list() == f["output_tokens"].cast(pl.Float64).to_list()


def test_explicit_and_auto_mixes_put_the_failures_in_the_long_mix_so_it_is_the_one_that_fails():
    tr = make_trace(_frame())
    for mixes in (SPEC, "auto"):
        r = fit_limits(tr, "error_rate <= 5%", mixes=mixes, n_boot=0)
        by = {m.mix.name: m for m in r.limits}
        # the mix whose output range starts above the short requests' 50 tokens
        long = next(m for m in r.limits if ((m.mix.bounds.get("output_tokens") or [None])[0] or 0) > 50)
        short = next(m for m in r.limits if m is not long)
        assert len(by) == 2, by.keys()
        # long: 0 errors at 1 and 2 req/s, 25 % at 4 and 8 req/s -> fails between 2 and 4
        assert long.q_ult.bracket == (2.0, 4.0), (mixes, long.q_ult)
        assert short.q_ult.censored == "above" and short.q_ult.value == 8.0, (mixes, short.q_ult)
    auto = auto_mixes(tr.frame.select("input_tokens", "output_tokens", "cached_tokens", "status",
                                      "requested_output_tokens"))
    # the 4**k grid cuts at 64 between 50 and 1,000; the failures' 0 output does not open a third bin
    assert [m.bounds["output_tokens"] for m in auto.mixes] == [(-math.inf, 64.0), (64.0, math.inf)]


def test_without_a_requested_length_failures_go_by_input_and_the_loader_says_so(tmp_path):
    """No requested length: the output dimension is unknown, so the failure is placed by input tokens
    only (here both mixes take any input, so the first), and the finding counts them."""
    p = tmp_path / "trace.csv"
    _frame(requested=False).drop("requested_output_tokens").write_csv(p)
    tr = load(p)
    finding = next(x for x in tr.provenance.findings if x.code == "failed_output_unknown")
    assert finding.message.startswith("600 of 600 failed request(s) produced no output")
    assert "by their input tokens" in finding.message
    by_input = MixSpec((Mix("small-in", {"input_tokens": (0.0, 100.0), "output_tokens": (0.0, 256.0)}),
                        Mix("big-in", {"input_tokens": (100.0, math.inf), "output_tokens": (256.0, math.inf)})))
    labelled = by_input.assign(tr.frame)
    # the 200-token inputs match "big-in" by input; their (unknown) output no longer decides
    assert set(labelled.filter(pl.col("status") == "error")["mix"]) == {"big-in"}
    # a successful request still needs its output inside the bounds
    ok_short = labelled.filter((pl.col("status") == "ok") & (pl.col("output_tokens") == 50))
    assert set(ok_short["mix"]) == {"other"}
    with_req = load_requested(tmp_path)
    assert not any(x.code == "failed_output_unknown" for x in with_req.provenance.findings)


def load_requested(tmp_path):
    p = tmp_path / "trace-requested.csv"
    _frame().write_csv(p)
    return load(p)


@pytest.mark.parametrize("args, expect", [
    ('{"body": {"max_tokens": 1024, "prompt": "x"}}', 1024),
    ({"body": {"max_completion_tokens": 64}}, 64),
    ('{"body": {"prompt": "x"}}', None),
    ("not json", None),
    ({"body": {"max_tokens": True}}, None),
    (None, None),
])
def test_guidellm_requested_output_from_request_args(args, expect):
    from bearing_lib.loaders.guidellm import _max_tokens

    assert _max_tokens(args) == expect


def test_rates_are_what_the_frame_says():
    f = _frame()
    per = f.group_by("step").agg((pl.col("status") != "ok").mean().alias("err")).sort("step")["err"].to_numpy()
    assert np.allclose(per, [0.0, 0.0, 0.25, 0.25])
