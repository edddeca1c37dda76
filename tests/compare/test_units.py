"""The pieces of a comparison, each against a case computed by hand."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from bearing_lib.common.errors import ParameterError, SchemaError
from bearing_lib.common.estimate import Estimate
from bearing_lib.compare import Comparison, Deployment, Identity, StepPoint
from bearing_lib.compare.front import pareto
from bearing_lib.compare.identity import apply_label, from_names, parse_label
from bearing_lib.compare.uncertainty import (
    Z975,
    bound_verdict,
    interval_of_bound,
    limit_draws,
    ratio_interval,
    replicates_agree,
    verdict_of,
)


def test_ratio_of_two_lognormals_matches_the_closed_form():
    # ln A ~ N(ln 10, s²), ln B ~ N(ln 5, s²): ln(A/B) ~ N(ln 2, 2 s²), 95% interval 2·exp(±1.96·s·√2)
    s, rng = 0.1, np.random.default_rng(0)
    a = limit_draws(10.0, (10 * math.exp(-Z975 * s), 10 * math.exp(Z975 * s)), None, rng, n=200_000)
    b = limit_draws(5.0, (5 * math.exp(-Z975 * s), 5 * math.exp(Z975 * s)), None, rng, n=200_000)
    assert a.source == "lognormal" and "not available" in a.method
    med, lo, hi = ratio_interval(a.draws, b.draws)
    assert med == pytest.approx(2.0, rel=2e-3)
    assert lo == pytest.approx(2 * math.exp(-Z975 * s * math.sqrt(2)), rel=5e-3)
    assert hi == pytest.approx(2 * math.exp(Z975 * s * math.sqrt(2)), rel=5e-3)


def test_replicates_used_only_when_they_agree_with_the_reported_interval():
    rng = np.random.default_rng(1)
    reps = np.exp(rng.normal(math.log(10), 0.05, 2000))
    ci = tuple(np.percentile(reps, [2.5, 97.5]))
    assert replicates_agree(reps, ci)
    assert limit_draws(10.0, ci, reps, rng, scale=0.5).source == "replicates"
    widened = (5.0, 20.0)  # the limits widened the interval to the step grid: the draws understate it
    d = limit_draws(10.0, widened, reps, rng)
    assert d.source == "lognormal" and "wider than the estimator's draws" in d.method
    assert np.percentile(d.draws, 2.5) == pytest.approx(5.0, rel=0.05)


def test_verdicts_and_ranges():
    assert verdict_of(1.05, 1.3) == "better" and verdict_of(0.5, 0.99) == "worse"
    assert verdict_of(0.9, 1.1) == "not distinguishable"
    assert interval_of_bound(4.0, "lower", (None, None)) == (4.0, math.inf)
    assert interval_of_bound(4.0, "none", (3.0, None)) == (3.0, math.inf)  # an open end is open, not the value
    assert bound_verdict((4.0, math.inf), (1.0, 3.5)) == "better"
    assert bound_verdict((4.0, math.inf), (1.0, 5.0)) == "not distinguishable"


def test_pareto_front_by_hand():
    assert pareto([(10, 100), (20, 80), (15, 70), (30, 10), (5, 100)]) == [True, True, False, True, False]


def test_identity_from_names_and_labels(tmp_path):
    d = tmp_path / "vllm_chunking_and_prefix_caching_tp2_pp1"
    d.mkdir()
    ident = Identity(name="x")
    from_names(ident, [str(d)])
    assert ident.engine == "vllm" and (ident.tensor_parallel, ident.pipeline_parallel) == (2, 1)
    assert ident.options == {"chunked_prefill": "on", "prefix_caching": "on"}
    name, kv = parse_label("x=model=m,gpus=4,quantization=fp8,instances=2")
    apply_label(ident, kv)
    assert (ident.model, ident.gpus, ident.instances, ident.options["quantization"]) == ("m", 4, 2, "fp8")
    assert ident.stated["gpus"] == "--label"
    with pytest.raises(ParameterError, match="integer"):
        apply_label(ident, {"gpus": "many"})
    with pytest.raises(ParameterError, match="NAME=key=value"):
        parse_label("x=model")


def _doc() -> Comparison:
    dep = Deployment(identity=Identity(name="a", model="m", gpus=8), sla="p90(ttft) <= 1s", mix="all",
                     limit=Estimate(2.0, ci95=(1.5, 2.5), unit="rps", basis="offered"),
                     per_instance_rps=Estimate(1.9, ci95=(1.4, 2.4), unit="rps", basis="achieved"),
                     steps=[StepPoint("a", 1.0, 0.99, 200.0, 25.0, 40.0, "pass", True, True)])
    return Comparison(deployments=[dep, dep], answer=["a"], basis="req/s per instance")


def test_json_round_trip_and_refusals():
    c = _doc()
    doc = json.loads(json.dumps(c.to_dict()))
    assert doc["schema"] == "bearing.compare/1"
    assert Comparison.from_dict(doc).to_dict() == doc
    with pytest.raises(SchemaError, match="limits document"):
        Comparison.from_dict({"schema": "bearing.limits/2", "mixes": []})
    bad = dict(doc, deployments=[{**doc["deployments"][0], "limit": {"value": "high"}}])
    with pytest.raises(SchemaError, match="deployments.0.limit.value"):
        Comparison.from_dict(bad)


def test_nothing_ranked_says_each_kind_of_reason_once_with_its_pairs():
    from bearing_lib.compare.build import unranked_summary
    from bearing_lib.compare.result import PairDifference

    def p(a, b, *why):
        return PairDifference(a, b, False, "none", "not ranked", "", reasons=list(why))

    pairs = [p("a", "b", "the model of a is unknown (state it with --label a=model=...)",
               "the model of b is unknown (state it with --label b=model=...)"),
             p("a", "c", "the model of a is unknown (state it with --label a=model=...)",
               "different workloads (200 vs 100 output tokens per request; ...)"),
             p("b", "c", "different workloads (200 vs 100 output tokens per request; ...)")]
    line = unranked_summary([], pairs)
    assert line == ("no two deployments could be ranked: a model is unknown (2 of 3 pairs: a–b, a–c); different "
                    "workloads (tokens per request) (2 of 3 pairs: a–c, b–c); state the model with --label "
                    "NAME=model=...; each pair's reasons are under the differences")
