"""The typed parts of the limits JSON (issue 26: no ``dict[str, Any]`` inside the limits result) write and read
exactly the keys and values the document had as dicts.

The reference documents are read with :mod:`json` only: ``tests/fixtures/plan/golden/limits_lmbench.json`` (written
by ``bearing limits`` on the bundled LMBenchmark sweep before these parts were typed) and a synthetic M/M/1 run
whose load drops after an overload (a ``T_recover`` drop, both ``P_critical`` estimates).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
import pytest

from bearing_lib.common.files import jsonable
from bearing_lib.common.schema import NotAvailable, parse
from bearing_lib.data.engine import Engine, EngineRun
from bearing_lib.limits.fit import fit_limits
from bearing_lib.limits.followup import FollowUpModel, design_followup
from bearing_lib.limits.recovery import Drop
from bearing_lib.limits.result import (
    Exceedance,
    FollowUpSummary,
    LimitsResult,
    PCriticalEstimate,
    StatsSettings,
    schema_document,
)
from bearing_lib.limits.settling import StepSettling
from bearing_lib.limits.sla import Bound, Clause, parse_sla
from bearing_lib.limits.steady import Mser5
from tests.limits.synth import make_trace, mm1_frame

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "plan" / "golden" / "limits_lmbench.json"


def _raw() -> dict:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


def _same(a: dict, b: dict) -> bool:
    return {k: v for k, v in a.items() if k != "bearing_version"} == {
        k: v for k, v in b.items() if k != "bearing_version"}


def _same_as_written(raw: dict) -> bool:
    """``raw`` read and written is ``raw``, but for the keys newer than the fixture (written with their defaults:
    ``q_ult``'s ``saturated_rps``, ``capped``, ``throughput_range_rps``; the mix's ``shapes``, empty; the conditions'
    ``estimator``, null: not recorded then), and a P_critical no method gave a value, written ``available: true``
    before round 22 and read as not available since."""
    out = LimitsResult.from_dict(copy.deepcopy(raw)).to_dict()
    if "estimator" not in raw.get("conditions", {}):
        assert out["conditions"].pop("estimator") is None
    for m, rm in zip(out["mixes"], raw["mixes"], strict=True):
        m["q_ult"] = {k: v for k, v in m["q_ult"].items() if k in rm["q_ult"]}
        pc, rpc = m.get("p_critical"), rm.get("p_critical")
        if pc and rpc and rpc.get("censored") == "unavailable" and rpc.get("available") is True:
            assert pc["available"] is False
            pc["available"] = True
        if "shapes" not in rm:
            assert m.pop("shapes") == []
    return _same(out, raw)


def test_a_real_limits_document_reads_into_typed_parts_and_writes_the_same_json():
    raw = _raw()
    res = LimitsResult.from_dict(copy.deepcopy(raw))
    assert _same_as_written(raw)
    seen = {"mser5": 0, "exceedances": 0, "settling": 0, "followup": 0}
    for m, rm in zip(res.mixes, raw["mixes"], strict=True):
        for st, rs in zip(m.steps, rm["steps"], strict=True):
            if rs["mser5"] is not None:
                seen["mser5"] += 1
                assert isinstance(st.mser5, Mser5) and jsonable(st.mser5) == rs["mser5"]
                assert (st.mser5.of, st.mser5.settled) == (rs["mser5"]["of"], rs["mser5"]["settled"])
            if rs["exceedances"] is not None:
                seen["exceedances"] += 1
                assert set(st.exceedances) == set(rs["exceedances"])  # keyed by the clause text
                for text, e in st.exceedances.items():
                    assert isinstance(e, Exceedance) and (e.bad, e.of) == (rs["exceedances"][text]["bad"],
                                                                          rs["exceedances"][text]["of"])
            if rs["settling"] is not None:
                seen["settling"] += 1
                assert isinstance(st.settling, StepSettling) and jsonable(st.settling) == rs["settling"]
                assert [c.clause for c in st.settling.clauses] == [c["clause"] for c in rs["settling"]["clauses"]]
        for method, est in m.p_critical.alternatives.items():
            assert isinstance(est, PCriticalEstimate)
            assert jsonable(est) == rm["p_critical"]["alternatives"][method]
        res_doc = rm["q_ult"]["resolution"]
        if res_doc is not None and res_doc["followup"] is not None:
            seen["followup"] += 1
            f = m.q_ult.resolution.followup
            assert isinstance(f, FollowUpSummary) and jsonable(f) == res_doc["followup"]
            assert [s.load for s in f.steps] == [s["load"] for s in res_doc["followup"]["steps"]]
    assert all(seen.values()), seen  # the document holds every part at least once


def test_the_follow_up_designed_from_the_json_is_the_one_the_limits_kept():
    """``bearing next`` designs from the JSON mix; its summary is the ``q_ult.resolution.followup`` fit wrote."""
    raw = _raw()
    mix = next(m for m in raw["mixes"] if (m["q_ult"]["resolution"] or {}).get("followup"))
    plan = design_followup(mix)
    assert jsonable(plan.summary()) == mix["q_ult"]["resolution"]["followup"]
    assert isinstance(plan.model, FollowUpModel)
    d = plan.to_dict()["model"]
    assert list(d) == ["name", "W(x)", "tau(x)", "W0_s", "mu", "mu_basis", "saturated_rps", "rho_max", "source",
                       "warmup", "measurement", "budget"]
    assert d["name"] == mix["q_ult"]["resolution"]["followup"]["model"] == "M/G/1-style relaxation"
    assert (d["W0_s"], d["mu"]) == (plan.model.w0_s, plan.model.mu)


@pytest.fixture(scope="module")
def dropped():
    """M/M/1 at mu = 10 rps, 120 s steps: 1..8 rps, 12 rps (over mu), then back to 4 rps."""
    rates = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 12.0, 4.0]
    return fit_limits(make_trace(mm1_frame(rates, mu_rps=10.0, step_s=120.0, seed=1)), "p99(latency) <= 1s",
                      mixes="none", n_boot=20)


def test_recovery_drops_and_both_p_critical_estimates_round_trip(dropped):
    raw = json.loads(json.dumps(dropped.to_dict()))
    jsonschema.Draft202012Validator(schema_document()).validate(raw)  # the exported schema knows the typed parts
    assert _same(LimitsResult.from_dict(copy.deepcopy(raw)).to_dict(), raw)
    (m,) = dropped.mixes
    (rm,) = raw["mixes"]
    assert m.t_recover.drops and all(isinstance(d, Drop) for d in m.t_recover.drops)
    drop = rm["t_recover"]["drops"][0]
    # by construction: step 8 (12 rps, over mu) drops to step 9 (4 rps)
    assert (drop["from_step"], drop["to_step"], drop["from_load"], drop["to_load"]) == (8, 9, 12.0, 4.0)
    assert list(drop) == ["from_step", "to_step", "from_load", "to_load", "t_drop_s", "step_s", "rolling_s",
                          "hold_s", "value_s", "censored"]
    assert m.t_recover.to_dict() == rm["t_recover"]
    alts = rm["p_critical"]["alternatives"]
    assert set(alts) == {"breakpoint"} and m.p_critical.method == "2x_baseline"
    assert {"slope_change", "r_squared"} <= set(alts["breakpoint"]) and "baseline_p99_ms" not in alts["breakpoint"]
    assert jsonable(m.p_critical.alternatives["breakpoint"]) == alts["breakpoint"]
    assert m.p_critical.to_dict() == rm["p_critical"]


def test_a_goodput_clause_writes_its_bounds_and_reads_back_as_the_same_clause():
    c = parse_sla(["goodput(ttft<=500ms, tpot<=50ms) >= 95%"]).clauses[0]
    assert c.bounds == (Bound("ttft_ms", "<=", 500.0), Bound("tpot_ms", "<=", 50.0))
    assert jsonable(c) == c.to_dict() == {
        "text": "goodput(ttft<=500ms, tpot<=50ms) >= 95%", "kind": "goodput", "metric": None, "stat": "goodput",
        "op": ">=", "threshold": 0.95, "unit": "fraction",
        "bounds": [{"metric": "ttft_ms", "op": "<=", "threshold_ms": 500.0},
                   {"metric": "tpot_ms", "op": "<=", "threshold_ms": 50.0}]}
    assert parse(Clause, jsonable(c), what="sla") == c
    percentile = parse_sla(["p99(ttft) <= 2s"]).clauses[0]
    assert jsonable(percentile) == {"text": "p99(ttft) <= 2s", "kind": "percentile", "metric": "ttft_ms",
                                    "stat": "p99", "op": "<=", "threshold": 2000.0, "unit": "ms", "bounds": None}
    back = parse(Clause, jsonable(percentile), what="sla")
    assert back == percentile and back.q == 0.99


def test_the_conditions_keep_where_the_work_ran_the_stats_settings_and_stated_values():
    raw = _raw()
    with Engine("embedded") as eng:
        where = eng.describe()
    stats = {"n_blocks": 8, "rel_bin": 0.005, "tolerance": 0.01}
    raw["conditions"]["extra"] = {"engine": where, "stats": stats, "client": "fmperf", "repeats": 3,
                                  "probe": {"available": False, "reason": "no probe was run"}, "runs": ["a", "b"]}
    raw["conditions"]["pooled_runs"] = {"pooled": ["run-a", "run-b"]}
    jsonschema.Draft202012Validator(schema_document()).validate(raw)
    res = LimitsResult.from_dict(copy.deepcopy(raw))
    extra = res.conditions.extra
    assert isinstance(extra["engine"], EngineRun) and extra["engine"].engine == "embedded"
    assert extra["stats"] == StatsSettings(8, 0.005, 0.01)
    assert (extra["client"], extra["repeats"], extra["runs"]) == ("fmperf", 3, ["a", "b"])
    assert extra["probe"] == NotAvailable("no probe was run")
    assert res.conditions.pooled_runs == {"pooled": ["run-a", "run-b"]}
    written = res.to_dict()["conditions"]
    assert written.pop("estimator") is None  # not recorded in this fixture's time
    assert written == raw["conditions"]
    assert _same_as_written(raw)
    # an older file's condition outside the named ones lands in extra as it was written
    old = _raw()
    old["conditions"]["client"] = "fmperf"
    assert LimitsResult.from_dict(old).conditions.extra == {"client": "fmperf"}


def test_a_follow_up_that_could_not_be_designed_reads_as_not_available():
    raw = _raw()
    mix = next(m for m in raw["mixes"] if (m["q_ult"]["resolution"] or {}).get("followup"))
    mix["q_ult"]["resolution"]["followup"] = {"available": False, "reason": "no range"}
    res = LimitsResult.from_dict(copy.deepcopy(raw))
    f = next(m for m in res.mixes if m.run_id == mix["run_id"] and m.mix.name == mix["mix"]["name"])
    assert f.q_ult.resolution.followup == NotAvailable("no range")
    assert _same_as_written(raw)
