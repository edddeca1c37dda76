"""Every number the plan makes from a limit carries the limit's interval, an open end included, on the golden plans.

The three golden plans (``bench/golden.py``) are rebuilt here from their inputs (``tests/fixtures/plan/golden``, as
main wrote them). The expected values are read from the raw JSON with ``json`` alone: the limit's 95 % CI on the
achieved basis is ``q_ult.ci95 × throughput_rps / value`` (``docs/capacity-plan.md``, "Units"), the target the
profile's ``targets.target.rps``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from bearing_lib.plan.capacity_plan import CapacityPlan

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "plan" / "golden"
LIMITS = json.loads((GOLDEN / "limits_lmbench.json").read_text())
PLANS = {  # name: (profile, run, options), as bench/golden.py builds them
    "plan_lmbench_azure": ("profile_azure_lmbmix.json", "llm-d-70b-2replicas/sharegpt", {}),
    "plan_lmbench_mooncake": ("profile_mooncake_lmbmix.json", "llm-d-70b-2replicas/sharegpt", {"tier": "critical"}),
    "plan_short_azure": ("profile_azure_lmbmix.json", "llm-d-70b-2replicas/short_input", {"tested_instances": 2}),
}


def _raw_limit(run: str) -> tuple[float, float | None, float | None]:
    """(throughput at the limit, CI low, CI high) on the achieved basis, from the raw limits JSON."""
    (m,) = [m for m in LIMITS["mixes"] if m["run_id"] == run]
    q = m["q_ult"]
    k = q["throughput_rps"] / q["value"]
    lo, hi = q["ci95"]
    return q["throughput_rps"], None if lo is None else lo * k, None if hi is None else hi * k


def _rel(value: float, ci: list) -> tuple[float, float]:
    lo, hi = ci
    return (math.inf if lo is None else (value - lo) / value, math.inf if hi is None else (hi - value) / value)


@pytest.fixture(scope="module", params=sorted(PLANS))
def golden(request):
    profile, run, opts = PLANS[request.param]
    prof = json.loads((GOLDEN / profile).read_text())
    plan = CapacityPlan.build(json.loads(json.dumps(LIMITS)), prof, run=run, **opts)
    return request.param, run, prof, json.loads(json.dumps(plan.to_dict()))


def test_every_fos_interval_is_at_least_as_wide_relative_to_its_value_as_the_limits(golden):
    """Per side, the FOS's relative width is at least the limit's (the target's CI may add, never take away).
    Main's golden sharegpt plans broke this on the low side: FOS 0.148 (0.0621–0.209), i.e. 58.0 % below, from a
    limit 1.22 (0.484–1.456), 60.3 % below; now the FOS's low end is at most 0.484 / 8.243 = 0.0588."""
    _, run, prof, d = golden
    q, lo, hi = _raw_limit(run)
    t = prof["targets"]["target"]["rps"]
    q_lo_rel, q_hi_rel = _rel(q, [lo, hi])
    for fos in (d["fos"]["blended"], d["fos"]["per_mix"][0]["fos"]):
        f_lo_rel, f_hi_rel = _rel(fos["value"], fos["ci95"])
        assert f_lo_rel >= q_lo_rel - 1e-12 and f_hi_rel >= q_hi_rel - 1e-12
        assert fos["value"] == pytest.approx(q / t)
        assert fos["ci95"][0] <= lo / t * (1 + 1e-12)
        assert (fos["ci95"][1] is None) == (hi is None)
    # one mix: the blended limit's interval is the limit's own, exactly (no Monte-Carlo noise on it)
    assert d["fos"]["blended"]["q_blend_ci95"] == pytest.approx([lo, hi] if hi is not None else [lo, None])


def test_an_open_high_end_reaches_every_number_made_from_the_limit(golden):
    """short_input never failed above 9.75 rps (CI [9, open]): FOS, allowable, tokens/s are open above; the
    instance counts open below; the closed sharegpt plans have closed ranges whose ends are computed here."""
    name, run, prof, d = golden
    q, lo, hi = _raw_limit(run)
    n_tested = PLANS[name][2].get("tested_instances", 1)
    design = 2.5 if PLANS[name][2].get("tier") == "critical" else 1.5
    t = prof["targets"]["target"]["rps"]
    assert d["allowable_ci95"][0] == pytest.approx(lo / design)
    inst = d["instances"]
    # a higher limit needs fewer instances: the limit's LOW end gives the count's HIGH end
    assert inst["base_ci95"][1] == math.ceil(t / (lo / n_tested / design) - 1e-9)
    toks = d["economics"]["tokens"]
    mean_total = toks["mean_input_tokens"] + toks["mean_output_tokens"]
    assert toks["at_q_ult"]["total_tokens_per_s_ci95"][0] == pytest.approx(lo * mean_total)
    near = d["economics"]["staged"]["near_term"]
    peak = prof["targets"]["target"]["rps"] / prof["targets"]["target"].get("growth", 1.0)
    assert near["instances_ci95"][1] == math.ceil(peak * 1.5 / (lo / n_tested / design) - 1e-9)
    if hi is None:
        assert d["allowable_ci95"][1] is None and d["fos"]["blended"]["ci95"][1] is None
        assert toks["at_q_ult"]["total_tokens_per_s_ci95"][1] is None
        assert inst["base_ci95"][0] is None and inst["total_ci95"][0] is None and near["instances_ci95"][0] is None
        for reason in (d["fos"]["blended"]["open_reason"], d["allowable_open_reason"], inst["open_reason"],
                       toks["open_reason"]):
            assert reason.startswith("no step above the limit failed a clause")
        assert "≥ " in d["fos"]["blended"]["statement"] and "open above" in d["fos"]["blended"]["statement"]
        assert "≤ " in inst["reason"] and "low end open" in inst["reason"]
    else:
        assert d["allowable_ci95"][1] == pytest.approx(hi / design)
        assert inst["base_ci95"][0] == math.ceil(t / (hi / n_tested / design) - 1e-9)
        assert "open_reason" not in d["fos"]["blended"] and "allowable_open_reason" not in d
    # the document reads back as written: null stays an open end
    assert CapacityPlan.from_dict(d).to_dict() == d
