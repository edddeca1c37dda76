"""The fidelity dimensions on samples small enough to compute by hand (values worked out in the comments)."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from bearing_lib.common.errors import SchemaError
from bearing_lib.fidelity.assess import headline, overall
from bearing_lib.fidelity.burstiness import burstiness_dimension, index_of_dispersion, sla_time_scale_s
from bearing_lib.fidelity.cache import cache_dimension
from bearing_lib.fidelity.identity import model_dimension
from bearing_lib.fidelity.lengths import covered_share, length_dimension, quantiles
from bearing_lib.fidelity.rate import rate_dimension
from bearing_lib.fidelity.result import CacheRates, Fidelity, Mean, Names, Peak, RateRange
from bearing_lib.limits.sla import parse_sla

T = np.array([1, 2, 3] * 10, dtype=float)  # 30 requests (>= MIN_TEST_REQUESTS), the ECDF of [1, 2, 3]
P = np.array([2, 3, 4, 5] * 10, dtype=float)


def test_quantiles_are_linear():
    # x = [1, 2, 3]: P50 = x[1] = 2; P90 = x[1.8] = 2.8; P99 = x[1.98] = 2.98
    q = quantiles(np.array([3.0, 1.0, 2.0]))
    assert (q.p50, q.p90, q.p99, q.min, q.max, q.mean, q.n) == pytest.approx((2, 2.8, 2.98, 1, 3, 2, 3))


def test_length_distances_and_verdict_by_hand():
    # ECDFs at 1..5: test 1/3, 2/3, 1, 1, 1; production 0, 1/4, 1/2, 3/4, 1 -> D = max gap = 1/2 (at 3).
    # Wasserstein = area between the ECDFs = 1/3 + 5/12 + 1/2 + 1/4 = 1.5 (= the difference of the means,
    # since production dominates). Production above the tested max 3: {4, 5} = 50 %.
    d = length_dimension("input_tokens", T, P)
    assert d.distance["ks"] == pytest.approx(0.5)
    assert d.distance["wasserstein"] == pytest.approx(1.5)
    assert d.extra.longer_than_tested == pytest.approx(0.5)
    assert d.extra.shorter_than_tested == 0.0
    assert d.verdict == "differs"
    assert "production's median is 4" in d.statement  # [2,3,4,5]x10: x[19.5] = 3.5 -> printed 4 (no decimals)


def test_same_lengths_represent():
    d = length_dimension("output_tokens", T, T.copy())
    assert d.distance["ks"] == 0.0 and d.verdict == "represents"


def test_fixed_length_test_is_named_as_such():
    d = length_dimension("input_tokens", np.full(40, 64.0), np.array([1469.0] * 9 + [50.0]))
    assert d.statement.startswith("the limit was measured on 64-token prompts; production's median is 1,469")
    assert d.extra.longer_than_tested == pytest.approx(0.9)


def test_too_few_test_requests_is_unknown():
    assert length_dimension("input_tokens", np.array([1.0, 2.0]), P).verdict == "unknown"
    assert length_dimension("input_tokens", T, None).verdict == "unknown"


def test_covered_share_by_hand():
    # tested inputs [1, 3], outputs [1, 3]; production pairs: (2,2) in, (4,2) out, (2,5) out, (1,1) in -> 2/4
    pi, po = np.array([2, 4, 2, 1.0]), np.array([2, 2, 5, 1.0])
    assert covered_share(T, T, pi, po) == pytest.approx(0.5)
    assert covered_share(T, None, pi, po) is None


def test_cache_ratio_token_weighted():
    test = pl.DataFrame({"input_tokens": [100, 100], "cached_tokens": [0, 0]})
    prod = pl.DataFrame({"input_tokens": [100, 300], "cached_tokens": [50, 150]})  # 200 / 400 = 50 %
    d = cache_dimension(test, prod)
    assert d.production.token_hit_ratio == pytest.approx(0.5) and d.test.token_hit_ratio == 0.0
    assert d.verdict == "differs"
    none = cache_dimension(test, pl.DataFrame({"input_tokens": [1]}))
    assert none.verdict == "unknown" and none.statement.startswith("production gives no cached-token counts")


def test_index_of_dispersion_by_hand():
    # two requests every other second: starts 2m + 0.25 and 2m + 0.75 (m = 0..9; exact in binary), 1 s bins from 0.25:
    # 18 complete bins, 9 holding 2 and 9 holding 0: mean 1, sample variance 18/17 -> IoD 18/17
    starts = np.sort(np.concatenate([2 * np.arange(10) + 0.25, 2 * np.arange(10) + 0.75]))
    iod, bins = index_of_dispersion(starts, 1.0)
    assert bins == 18 and iod == pytest.approx(18 / 17)
    # a fixed schedule of 2 per second: every bin holds 2, variance 0
    assert index_of_dispersion(np.arange(0, 60, 0.5), 1.0)[0] == pytest.approx(0.0)


def test_index_of_dispersion_of_poisson_is_one():
    rng = np.random.default_rng(7)
    starts = np.cumsum(rng.exponential(1 / 5.0, 200_000))  # 5 req/s for ~11 h
    iod, _ = index_of_dispersion(starts, 1.0)
    assert iod == pytest.approx(1.0, abs=0.02)  # sd of the estimate ~ sqrt(2 / 40,000 bins) = 0.007


def test_time_scale_is_the_sla_latency_threshold():
    assert sla_time_scale_s(parse_sla(["p95(ttft) <= 1s", "error_rate <= 1%"]))[0] == 1.0
    assert sla_time_scale_s(parse_sla(["p95(ttft) <= 500ms", "p99(latency) <= 30s"]))[0] == 30.0
    assert sla_time_scale_s(parse_sla(["error_rate <= 1%"]))[0] == 60.0


def test_burstiness_per_step():
    # the test: two steps, each a fixed schedule (IoD 0); production: the alternating pattern (IoD 18/17)
    test = pl.DataFrame({"run_id": ["r"] * 80, "step": [0] * 40 + [1] * 40,
                         "start_s": list(np.arange(0, 20, 0.5)) + list(100 + np.arange(0, 20, 0.5))})
    starts = np.sort(np.concatenate([2 * np.arange(10) + 0.25, 2 * np.arange(10) + 0.75]))
    d = burstiness_dimension(test, pl.DataFrame({"start_s": starts}), parse_sla(["p95(ttft) <= 1s"]))
    assert d.test.index_of_dispersion == pytest.approx(0.0)
    assert d.production.index_of_dispersion == pytest.approx(18 / 17)
    assert d.verdict == "differs"  # 18/17 > 2 x 0 and 1.06 - 0 > 0.5


def test_burstiness_of_steps_too_short_says_so():
    """Vegeta's 60 s attacks (a new user's case, round 21) have start times, but no step spans 10 bins of 10 s:
    the reason names the longest step, not "no request start times"."""
    test = pl.DataFrame({"run_id": ["r"] * 120, "step": [0] * 60 + [1] * 60,
                         "start_s": list(np.arange(0, 60, 1.0)) + list(200 + np.arange(0, 59.5, 0.5)[:60])})
    prod = pl.DataFrame({"start_s": np.arange(0, 600, 0.7)})
    d = burstiness_dimension(test, prod, parse_sla(["p95(latency) <= 10s"]))
    assert d.verdict == "unknown" and d.test is None
    assert d.statement.startswith("the test's steps (the longest 59 s) are shorter than 10 bins of 10 s")
    assert "start times" not in d.statement
    # without start times the old words stand
    d = burstiness_dimension(test.drop("start_s"), prod, parse_sla(["p95(latency) <= 10s"]))
    assert d.statement.startswith("the test gives no request start times over ≥ 10 bins of 10 s")


def test_rate_against_peak():
    assert rate_dimension([0.5, 1.0, 2.0], 8.0).verdict == "differs"
    d = rate_dimension([0.5, 1.0, 10.0], 8.0)
    assert d.verdict == "represents" and d.test == RateRange(min_rps=0.5, max_rps=10.0, steps=3)
    assert d.to_dict()["test"] == {"min_rps": 0.5, "max_rps": 10.0, "steps": 3}  # the JSON form as before
    assert rate_dimension([], 8.0).verdict == "unknown"


def test_model_names_ignore_case_and_organisation():
    assert model_dimension(["meta-llama/Llama-3.1-8B"], ["llama-3.1-8b"]).verdict == "represents"
    assert model_dimension(["SmolLM2"], ["llama-3.1-70b"]).verdict == "differs"
    assert model_dimension([], ["x"]).verdict == "unknown"


def test_overall_headline_and_round_trip():
    dims = [length_dimension("input_tokens", np.full(40, 64.0), np.full(10, 1469.0)),
            length_dimension("output_tokens", T, T.copy()), rate_dimension([1.0], None)]
    assert overall(dims) == "differs"
    assert headline(dims) == ("the limit was measured on 64-token prompts; production's median is 1,469 (P99 1,469); "
                              "100% of its prompts are longer than any tested")
    assert overall(dims[1:]) == "unknown"  # the input length was not judged
    f = Fidelity("differs", dims, headline(dims), 0.0, "t", "p", run="r", notes=["n"])
    assert Fidelity.from_dict(f.to_dict()).to_dict() == f.to_dict()


def test_each_side_is_read_back_into_its_type_and_an_unknown_shape_is_named():
    """The JSON of each kind of side (quantiles, a mean, cache rates, dispersion, rates, names) reads back into
    its own type; the figures are the ones written by hand here."""
    prod = pl.DataFrame({"input_tokens": [100, 100], "cached_tokens": [50, 0]})
    dims = [cache_dimension(prod.with_columns(pl.lit(0).alias("cached_tokens")), prod),
            rate_dimension([0.5, 2.0], 8.0, peak_basis="the target load"), model_dimension(["a"], ["b"]),
            length_dimension("output_tokens", None, np.array([300.0, 350.0, 400.0]), test_mean_only=159.0)]
    doc = json.loads(json.dumps(Fidelity("differs", dims, None, None, "t", "p").to_dict()))
    back = Fidelity.from_dict(doc)
    cache, rate, model, out = back.dimensions
    assert cache.production == CacheRates(token_hit_ratio=50 / 200, request_hit_share=0.5, n=2.0)
    assert rate.test == RateRange(0.5, 2.0, 2) and rate.production == Peak(8.0, "the target load")
    assert model.test == Names(["a"]) and out.test == Mean(159.0) and out.production.p50 == 350.0
    assert doc["dimensions"][0]["extra"] == {} and cache.extra is None  # no extra: {} in the JSON, as before
    doc["dimensions"][1]["test"] = {"min_rps": 0.5, "top_rps": 2.0}
    with pytest.raises(SchemaError, match=r"fidelity\.dimensions\[1\]\.test: expected an object with the keys of one "
                                          r"of: .*min_rps, max_rps, steps.* \(found min_rps, top_rps\)"):
        Fidelity.from_dict(doc)


def test_a_load_point_table_gives_only_a_mean():
    # LLMPerf summaries: 159 output tokens per request on average; production's median 350 is 2.2x that
    d = length_dimension("output_tokens", None, np.array([300.0, 350.0, 400.0]), test_mean_only=159.0)
    assert d.verdict == "differs" and "2.2× the tested mean" in d.statement
    assert length_dimension("output_tokens", None, np.array([150.0, 160.0, 170.0]),
                            test_mean_only=159.0).verdict == "unknown"  # within 0.5-2x: no distance to judge by
    none = length_dimension("input_tokens", None, np.array([1.0, 2.0]))
    assert none.verdict == "unknown" and none.statement.startswith("the test gives no per-request input length")


def test_a_tiny_share_is_not_printed_as_zero():
    # 1 production prompt of 5,000 is shorter than any tested: 0.02 %, printed "< 0.1%", never "0.0%"
    prod = np.array([50.0] + [150.0] * 4999)
    d = length_dimension("input_tokens", np.array([100.0, 200.0] * 20), prod)
    assert d.extra.shorter_than_tested == pytest.approx(1 / 5000)
    assert "< 0.1% are shorter than any tested (100)" in d.statement and "0.0%" not in d.statement


def test_a_tables_mean_lengths_are_the_reports_runs():
    """SGLang's 405b file holds a random 1,024/1,024 run and a ShareGPT run (a new user's case, round 22): the
    random run's report compared "mean 509 tokens", the median over both runs' steps; its own steps' median is
    taken (here by hand: 100/1 = 100, 300/1 = 300, 500/1 = 500 for run a; 20 for run b)."""
    from types import SimpleNamespace

    from bearing_lib.fidelity.assess import _mean_per_request

    frame = pl.DataFrame({"run_id": ["f/a", "f/a", "f/a", "f/b", "f/b"], "throughput_rps": [1.0, 2.0, 4.0, 1.0, 2.0],
                          "input_tokens_per_s": [100.0, 600.0, 2000.0, 20.0, 40.0]})
    t = SimpleNamespace(frame=frame, kind="loadpoints")
    assert _mean_per_request(t, "input_tokens", "f/a") == pytest.approx(300.0)
    assert _mean_per_request(t, "input_tokens", "a") == pytest.approx(300.0)  # the run's short name
    assert _mean_per_request(t, "input_tokens", "f/b") == pytest.approx(20.0)
    assert _mean_per_request(t, "input_tokens") == pytest.approx(100.0)  # no run: every step, as before


def test_a_mean_ratio_never_prints_as_the_rules_edge():
    """AIPerf's sweep: production's median 129 tokens against a tested mean of 263.4 is 0.49×, outside 0.5–2×, and
    read "0.5× the tested mean" (a new user's case, round 22)."""
    from bearing_lib.fidelity.lengths import length_dimension

    d = length_dimension("input_tokens", None, np.full(200, 129.0), test_mean_only=263.4)
    assert d.verdict == "differs" and d.statement.endswith(": 0.49× the tested mean")
    d = length_dimension("input_tokens", None, np.full(200, 1020.0), test_mean_only=202.0)
    assert d.statement.endswith(": 5× the tested mean")  # 5.05, far from an edge: two significant digits
    from bearing_lib.fidelity.lengths import _ratio_text

    assert [_ratio_text(r) for r in (0.4999, 2.0004, 0.03, 0.5, 12.34)] == ["0.4999", "2.0004", "0.03", "0.5", "12"]
