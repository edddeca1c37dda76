"""The profile JSON carries what the plan needs: the per-minute series and the sequence lengths.

Expected values are computed independently in the tests: per-minute counts of the REAL
Azure 2023 conversation trace (bundled, CC-BY-4.0) from stdlib ``csv`` + ``datetime`` on
UTC wall-clock minutes (empty minutes zero, partial first and last minutes left out);
sequence-length quantiles with ``numpy.quantile`` (linear, numpy's default) on the raw
``ContextTokens`` / ``GeneratedTokens``; rate windows are SYNTHETIC with known counts.
"""

from __future__ import annotations

import csv
import json
import math
from collections import Counter
from datetime import UTC, datetime

import numpy as np
import polars as pl
import pytest

from bearing_lib import load_trace
from bearing_lib.common.errors import InsufficientDataError, SchemaError
from bearing_lib.data.mixes import MixSpec
from bearing_lib.data.provenance import Provenance
from bearing_lib.data.ratewindows import RATE_SCHEMA, RateWindows
from bearing_lib.data.trace import RequestTrace, conform, validate
from bearing_lib.plan.capacity_plan import CapacityPlan, series_from_profile, window_series_from_profile
from bearing_lib.traffic.profile import profile_traffic
from bearing_lib.traffic.seqlen import seq_len_distribution
from tests.conftest import BUNDLED

CONV = "traces/azure-llm-inference-2023/AzureLLMInferenceTrace_conv.csv"


def _raw(path):
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    ts = [datetime.strptime(r["TIMESTAMP"][:26], "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=UTC).timestamp()
          for r in rows]
    inp = np.array([int(r["ContextTokens"]) for r in rows], dtype=float)
    out = np.array([int(r["GeneratedTokens"]) for r in rows], dtype=float)
    return ts, inp, out


@pytest.fixture(scope="module")
def conv():
    path = BUNDLED / CONV
    prof = profile_traffic(load_trace(path), mix_spec=MixSpec.single(), n_boot=50)
    # through a JSON round trip, as `bearing profile` writes and `bearing plan` reads it
    return path, _raw(path), json.loads(json.dumps(prof.to_dict(), allow_nan=False)), prof


def _stats(v: np.ndarray) -> dict[str, float]:
    p50, p90, p99 = np.quantile(v, [0.5, 0.9, 0.99])
    return {"n": v.size, "mean": v.mean(), "p50": p50, "p90": p90, "p99": p99, "max": v.max()}


def test_per_minute_series_matches_an_independent_count(conv):
    _, (ts, _, _), d, _ = conv
    minutes = Counter(math.floor(t / 60) for t in ts)
    keys = range(min(minutes) + 1, max(minutes))  # partial first and last minutes left out
    s = d["per_minute"]["series"]
    assert s["minute_start_s"] == [k * 60.0 for k in keys]
    assert s["requests"] == [minutes.get(k, 0) for k in keys]
    assert len(s["requests"]) == d["per_minute"]["n_minutes"] == 58 and max(s["requests"]) == 502
    # the plan reads it back with UTC minute labels
    counts, labels = series_from_profile(d)
    assert counts == [float(minutes.get(k, 0)) for k in keys]
    assert labels[0] == datetime.fromtimestamp(keys[0] * 60, tz=UTC).strftime("%Y-%m-%d %H:%M")


def test_seq_len_matches_numpy(conv):
    _, (_, inp, out), d, _ = conv
    sl = d["seq_len"]
    assert sl["available"] is True and sl["quantile_method"] == "linear" and sl["n_without_counts"] == 0
    for got, v in ((sl, inp + out), (sl["input_tokens"], inp), (sl["output_tokens"], out)):
        exp = _stats(v)
        assert got["n"] == exp["n"] == 19_366
        for k in ("mean", "p50", "p90", "p99", "max"):
            assert got[k] == pytest.approx(exp[k], rel=1e-12), k


def test_plan_from_the_json_alone_equals_the_plan_with_the_trace(conv):
    path, (_, inp, out), d, _ = conv
    limits = {"mixes": [{"mix": {"name": "all"},
                         "q_ult": {"value": 12.0, "unit": "rps", "ci95": [10.0, 14.0], "censored": "none"}}]}
    kw = {"model": "llama-3.1-8b", "gpu_mem_gib": 80, "concurrency": 8}
    alone = CapacityPlan.build(limits, d, **kw).to_dict()
    without = {k: v for k, v in d.items() if k != "seq_len"}
    without["per_minute"] = {k: v for k, v in d["per_minute"].items() if k != "series"}
    with_trace = CapacityPlan.build(limits, without, trace=load_trace(path), **kw).to_dict()
    for section in ("cbu", "elasticity", "memory"):
        assert alone[section].get("available", True) is True, alone[section]
    assert alone["cbu"] == with_trace["cbu"] and alone["elasticity"] == with_trace["elasticity"]
    assert alone["cbu"]["n_minutes"] == 58
    # memory: the same figures; only the named source of the sequence lengths differs
    assert alone["memory"]["rows"] == with_trace["memory"]["rows"]
    assert {k: v for k, v in alone["memory"]["seq_len"].items() if k != "source"} == \
        {k: v for k, v in with_trace["memory"]["seq_len"].items() if k != "source"}
    assert alone["memory"]["seq_len"]["p99"] == pytest.approx(float(np.quantile(inp + out, 0.99)))
    assert alone["memory"]["seq_len"]["source"] == "profile JSON seq_len"


def test_include_series_false_and_row_form(conv):
    *_, prof = conv
    d = prof.to_dict(include_series=False)
    assert "series" not in d["per_minute"]
    assert series_from_profile(d) is None
    full = prof.to_dict()["per_minute"]["series"]
    rows = [{"minute_start_s": t, "requests": n} for t, n in zip(full["minute_start_s"], full["requests"],
                                                                    strict=True)]
    counts, labels = series_from_profile({"per_minute": {"series": rows}})
    assert counts == [float(x) for x in full["requests"]] and len(labels) == 58


def test_malformed_series_is_refused_with_the_field():
    with pytest.raises(SchemaError, match=r"per_minute\.series.*2 values but 'requests' has 3"):
        series_from_profile({"per_minute": {"series": {"minute_start_s": [0, 60], "requests": [1, 2, 3]}}},
                            source="p.json")
    # validated at the edge with every problem together: the path names the column and the row
    with pytest.raises(SchemaError, match=r"per_minute\.series\.requests\.1: Input should be greater"):
        series_from_profile({"per_minute": {"series": {"minute_start_s": [0, 60], "requests": [1, -2]}}})
    with pytest.raises(SchemaError, match="bin_s"):
        window_series_from_profile({"per_window": {"series": {"window_start_s": [0], "requests": [6]}}})


def _rate_windows() -> tuple[RateWindows, list[float]]:
    # SYNTHETIC: two clients, 12 windows of 600 s; total requests per window known exactly
    rows = []
    totals = []
    for w in range(12):
        a, b = 1.0 + 0.5 * w, 2.0 if w != 7 else 6.0
        totals.append((a + b) * 600)
        for client, rate in (("a", a), ("b", b)):
            rows.append({"client": client, "window_start_s": 600.0 * w, "window_s": 600.0, "rate_rps": rate,
                         "cv": 1.0, "pattern": "exp", "shape": None, "scale": None})
    frame = pl.DataFrame(rows, schema=RATE_SCHEMA)
    prov = Provenance(source="synthetic-windows", format="synthetic", tool="test", sha256="", time_origin="relative")
    return RateWindows(frame, prov), totals


def test_rate_window_series_spread_over_minutes():
    rw, totals = _rate_windows()
    d = json.loads(json.dumps(profile_traffic(rw, n_boot=20).to_dict(), allow_nan=False))
    s = d["per_window"]["series"]
    assert s["bin_s"] == 600.0 and s["window_start_s"] == [600.0 * w for w in range(12)]
    assert s["requests"] == pytest.approx(totals)
    assert d["per_minute"]["available"] is False and d["seq_len"]["available"] is False
    counts, labels, note = window_series_from_profile(d)
    assert counts == pytest.approx([t / 10 for t in totals for _ in range(10)])
    assert labels[:2] == ["0.0", "60.0"] and "spread evenly over its 10 minutes" in note
    limits = {"mixes": [{"mix": {"name": "all"}, "q_ult": {"value": 10.0, "unit": "rps", "censored": "none"}}]}
    plan = CapacityPlan.build(limits, d, model="llama-3.1-8b").to_dict()
    assert plan["cbu"]["n_minutes"] == 120
    # the busiest window (7: 4.5 + 6 req/s) spread evenly: 630 req/min; allowable 10 / 1.5 req/s
    assert plan["cbu"]["max"] == pytest.approx(630 / 60 / (10 / 1.5))
    assert plan["elasticity"]["n_minutes"] == 120
    assert any("spread evenly" in n for n in plan["notes"])
    assert plan["memory"]["available"] is False
    assert plan["memory"]["reason"].startswith("the profile has no sequence-length distribution: the source gives")


def test_seq_len_distribution_leaves_out_requests_without_both_counts():
    rng = np.random.default_rng(11)
    inp = rng.integers(1, 4000, 300).astype(float)
    out = rng.integers(1, 900, 300).astype(float)
    inp_n = [None if i % 10 == 0 else float(x) for i, x in enumerate(inp)]  # 30 without input
    s = seq_len_distribution(pl.DataFrame({"input_tokens": inp_n, "output_tokens": out}))
    keep = np.arange(300) % 10 != 0
    assert s.n_without_counts == 30 and s.total.n == s.output_tokens.n == 270
    exp = _stats(inp[keep] + out[keep])
    assert s.total.p90 == pytest.approx(exp["p90"]) and s.total.max == exp["max"]
    assert s.output_tokens.p99 == pytest.approx(float(np.quantile(out[keep], 0.99)))
    with pytest.raises(InsufficientDataError, match="only 99 request"):
        seq_len_distribution(pl.DataFrame({"input_tokens": [1.0] * 99, "output_tokens": [2.0] * 99}), source="x")


def test_profile_says_why_seq_len_is_missing():
    # SYNTHETIC: 150 requests over 150 s (two complete minutes), input counts only
    frame = pl.DataFrame({"start_s": [1_700_000_000.0 + i for i in range(150)], "input_tokens": [100] * 150})
    prov = Provenance(source="synthetic", format="synthetic", tool="test", sha256="")
    prof = profile_traffic(RequestTrace(validate(conform(frame), prov), prov), n_boot=20)
    assert prof.seq_len.available is False
    d = json.loads(json.dumps(prof.to_dict(), allow_nan=False))
    assert d["seq_len"] == {"available": False, "reason": "synthetic: only 0 request(s) carry input and output "
                                                          "token counts; a P99 sequence length needs at least 100"}
    # 1_700_000_000 s is 22:13:20 UTC: 22:13 is partial (the first request), 22:14 complete with 60
    # requests, 22:15 holds the last request (partial): both partial minutes are left out
    assert d["per_minute"]["series"] == {"minute_start_s": [1_700_000_040.0], "requests": [60]}
    assert any(line.startswith("seq length:  not available: synthetic: only 0") for line in prof.summary_lines())


def test_the_dispersion_keys_say_how_it_was_measured(conv):
    """The typed dispersion writes the keys it wrote as a dict: from request times the index's bin and no
    per-client CV; from rate windows the rate-weighted per-client CV (both clients' CV 1.0: weighted, 1.0) and no
    bin. Read with json, not through bearing."""
    d = conv[2]["dispersion"]  # the Azure conversation trace's profile through a JSON round trip
    assert list(d) == ["index_of_dispersion", "index_of_dispersion_bin_s", "index_of_dispersion_note",
                       "interarrival_cv", "interarrival_cv_note"]
    assert d["index_of_dispersion_bin_s"] == 60.0
    rw, _ = _rate_windows()
    w = json.loads(json.dumps(profile_traffic(rw, n_boot=20).to_dict(), allow_nan=False))["dispersion"]
    assert list(w) == ["index_of_dispersion", "index_of_dispersion_note", "interarrival_cv", "interarrival_cv_note",
                       "per_client_window_cv_rate_weighted", "per_client_window_cv_note"]
    assert w["index_of_dispersion"] is None and w["interarrival_cv"] is None
    assert w["per_client_window_cv_rate_weighted"] == pytest.approx(1.0)


def test_the_rate_statistics_keep_their_json_keys(conv):
    """The typed rate statistics write the keys they wrote as dicts: the per-minute block counts ``n_minutes`` and
    carries the tokens per minute, the per-second block ``n_bins``, the per-window block its note; ``rps`` is the
    per-bin figure over the bin (read with json; the window totals are the synthetic ones above)."""
    d = conv[2]
    head = ["available", "bin_s"]
    body = ["n_empty", "mean", "p50", "p95", "p99", "max", "peak_to_mean", "rps", "unit"]
    assert [k for k in d["per_minute"] if k != "series"] == [*head, "n_minutes", *body, "tokens"]
    assert list(d["per_second"]) == [*head, "n_bins", *body]
    assert d["per_minute"]["rps"]["max"] == pytest.approx(d["per_minute"]["max"] / 60.0, rel=1e-12)
    assert set(d["per_minute"]["tokens"]["input_tokens"]) == {"mean", "p95", "p99", "max", "unit"}
    rw, totals = _rate_windows()
    w = json.loads(json.dumps(profile_traffic(rw, n_boot=20).to_dict(), allow_nan=False))["per_window"]
    assert [k for k in w if k != "series"] == [*head, "n_bins", *body, "note"]
    assert (w["n_bins"], w["max"], w["bin_s"]) == (12, max(totals), 600.0)
    assert w["rps"]["max"] == pytest.approx(max(totals) / 600.0)
