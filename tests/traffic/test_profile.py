"""Traffic profile on the real production traces.

Every expected value is computed independently inside the test: stdlib ``csv`` /
``json`` / ``datetime`` parsing of the raw file, ``collections.Counter`` for the bins and
numpy for the statistics (not polars, not bearing's binning). The published facts (Azure
code: 56 full minutes, 13 empty, peak 585, mean 152.1, peak/mean 3.85; conversation: 58
minutes, peak 502, peak/mean 1.51; ServeGen m-large: mean 195.8 / peak 583.0 / min 48.4
req/s) are asserted as well.
"""

from __future__ import annotations

import csv
import gzip
import json
import math
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from bearing_lib import load, load_trace
from bearing_lib.common.errors import InsufficientDataError, ParameterError
from bearing_lib.data.mixes import Mix, MixSpec
from bearing_lib.data.provenance import Provenance
from bearing_lib.data.trace import RequestTrace
from bearing_lib.traffic.binning import timestamp_resolution
from bearing_lib.traffic.document import TrafficProfile
from bearing_lib.traffic.profile import MixShares, mix_shares, per_minute_counts, profile_traffic

AZURE = {
    "code": "traces/azure-llm-inference-2023/AzureLLMInferenceTrace_code.csv",
    "conv": "traces/azure-llm-inference-2023/AzureLLMInferenceTrace_conv.csv",
}
MOONCAKE = "traces/mooncake-fast25/conversation_trace.jsonl"
SERVEGEN = "traces/servegen-aggregates/language/m-large"


def _azure_rows(path: Path) -> list[tuple[float, int, int]]:
    out = []
    with open(path, newline="") as fh:
        for r in csv.DictReader(fh):
            ts = r["TIMESTAMP"]
            t = datetime.strptime(ts[:26], "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=UTC).timestamp()
            out.append((t + int(ts[26:] or 0) * 1e-7, int(r["ContextTokens"]), int(r["GeneratedTokens"])))
    return out


def _full_bins(times: list[float], bin_s: float, origin: float) -> tuple[list[int], Counter]:
    """Independent binning: keys of complete bins and a Counter of requests per key."""
    lo, hi = min(times), max(times)
    first = math.ceil((lo - origin) / bin_s)
    last = math.floor((hi - origin) / bin_s) - 1
    keys = list(range(first, last + 1))
    c = Counter(math.floor((t - origin) / bin_s) for t in times)
    return keys, c


def _linear(v: list[float], q: float) -> float:
    s = sorted(v)
    pos = (len(s) - 1) * q
    i = math.floor(pos)
    return s[i] + (s[min(i + 1, len(s) - 1)] - s[i]) * (pos - i)


@pytest.mark.parametrize(
    "which,n_min,n_empty,peak,mean,ptm",
    [("code", 56, 13, 585, 152.1, 3.85), ("conv", 58, 0, 502, 333.4, 1.51)],
)
def test_azure_per_minute_matches_independent_count(bundled, which, n_min, n_empty, peak, mean, ptm):
    path = bundled(AZURE[which])
    rows = _azure_rows(path)
    keys, c = _full_bins([r[0] for r in rows], 60.0, 0.0)
    counts = [c.get(k, 0) for k in keys]
    tokens_in = Counter()
    for t, i, _o in rows:
        tokens_in[math.floor(t / 60)] += i

    tr = load_trace(path)
    pm = per_minute_counts(tr)
    assert pm.columns == ["minute_start_s", "requests", "input_tokens", "output_tokens"]
    assert pm["minute_start_s"].to_list() == [k * 60.0 for k in keys]
    assert pm["requests"].to_list() == counts
    assert pm["input_tokens"].to_list() == [tokens_in.get(k, 0) for k in keys]
    tin = np.array([tokens_in.get(k, 0) for k in keys], dtype=float)
    # the brief's published facts
    assert len(counts) == n_min and counts.count(0) == n_empty and max(counts) == peak
    assert round(float(np.mean(counts)), 1) == mean

    prof = profile_traffic(tr)
    d = prof.to_dict()
    m = d["per_minute"]
    assert m["n_minutes"] == n_min and m["n_empty"] == n_empty and m["max"] == peak
    assert m["mean"] == pytest.approx(float(np.mean(counts)), rel=1e-12)
    assert round(m["peak_to_mean"], 2) == ptm
    for q, key in ((0.5, "p50"), (0.95, "p95"), (0.99, "p99")):
        assert m[key] == pytest.approx(_linear(counts, q), rel=1e-12)
    assert m["rps"]["max"] == pytest.approx(peak / 60)
    assert m["unit"] == "requests/min"
    assert m["tokens"]["input_tokens"]["p99"] == pytest.approx(float(np.quantile(tin, 0.99)), rel=1e-12)
    assert m["tokens"]["input_tokens"]["mean"] == pytest.approx(float(tin.mean()), rel=1e-12)
    assert "UTC wall-clock" in d["convention"] and "partial first and last" in d["convention"]
    # one hour: no daily cycle, and the profile says why
    assert d["decomposition"]["available"] is False and "two full days" in d["decomposition"]["reason"]
    assert d["slots"]["hour_of_day"]["available"] is False and "one full day" in d["slots"]["hour_of_day"]["reason"]
    assert d["slo_budget"]["available"] is False and "no status" in d["slo_budget"]["reason"]
    assert d["targets"]["mid_term"]["available"] is False
    assert d["start_utc"].startswith("2023-11-16T18:1")
    json.dumps(d)  # JSON-ready


@pytest.mark.parametrize("which", ["code", "conv"])
def test_azure_per_second_and_dispersion_independent(bundled, which):
    path = bundled(AZURE[which])
    times = [r[0] for r in _azure_rows(path)]
    keys, c = _full_bins(times, 1.0, 0.0)
    per_s = np.array([c.get(k, 0) for k in keys], dtype=float)
    mkeys, mc = _full_bins(times, 60.0, 0.0)
    per_m = np.array([mc.get(k, 0) for k in mkeys], dtype=float)
    gaps = np.diff(np.array(times))

    prof = profile_traffic(load_trace(path))
    ps = prof.to_dict()["per_second"]
    assert ps["n_bins"] == per_s.size and ps["max"] == per_s.max()
    assert ps["mean"] == pytest.approx(per_s.mean(), rel=1e-12)
    assert ps["p99"] == pytest.approx(float(np.quantile(per_s, 0.99)), rel=1e-12)
    disp = prof.dispersion
    assert disp.index_of_dispersion == pytest.approx(per_m.var(ddof=1) / per_m.mean(), rel=1e-12)
    # float64 epoch seconds resolve ~2.4e-7 s, so gaps agree to ~1e-6 relative
    assert disp.interarrival_cv == pytest.approx(gaps.std(ddof=1) / gaps.mean(), rel=1e-5)
    assert prof.resolution.quantized is False
    # the README's figures (CV 13.2 code, 1.09 conv) with ddof=0; ddof=1 differs in the 4th digit
    assert round(disp.interarrival_cv, 1 if which == "code" else 2) == (13.2 if which == "code" else 1.09)


def _mooncake_independent(path: Path):
    with open(path) as fh:
        rows = [json.loads(line) for line in fh]
    return [r["timestamp"] / 1000.0 for r in rows], rows


def test_mooncake_quantum_and_relative_minutes(bundled):
    path = bundled(MOONCAKE)
    times, rows = _mooncake_independent(path)
    distinct = sorted(set(times))
    gaps = np.diff(distinct)
    # independent: the gaps between distinct times are all one ~3 s step (2.997-3.003 s)
    assert len(distinct) == 1180 and gaps.min() >= 2.99 and gaps.max() <= 3.01
    keys, c = _full_bins(times, 60.0, min(times))
    counts = [c.get(k, 0) for k in keys]

    tr = load_trace(path)
    assert tr.provenance.time_origin == "relative"
    prof = profile_traffic(tr)
    res = prof.resolution
    assert res.quantized and res.n_distinct_start_times == 1180
    assert res.quantum_s == pytest.approx(float(gaps.sum() / gaps.size), abs=1e-9)
    assert res.quantum_s == pytest.approx(3.0, abs=0.005)
    grid = timestamp_resolution(tr)
    assert grid.quantum_s == res.quantum_s and not grid.allows_bin(1.0) and grid.allows_bin(60.0)
    d = prof.to_dict()
    assert d["per_second"]["available"] is False and "3 s steps" in d["per_second"]["reason"]
    assert d["dispersion"]["interarrival_cv"] is None and "grid" in d["dispersion"]["interarrival_cv_note"]
    assert "relative" in d["convention"] and "cannot be aligned to wall-clock" in d["convention"]
    assert d["start_utc"] is None and d["clock"].startswith("relative")
    m = d["per_minute"]
    assert m["n_minutes"] == len(counts) == 58
    assert m["max"] == max(counts) == 247  # the data README: peak 247
    assert m["mean"] == pytest.approx(float(np.mean(counts)), rel=1e-12)
    assert round(m["mean"], 1) == 203.9
    assert per_minute_counts(tr)["requests"].to_list() == counts


def _servegen_independent(folder: Path) -> np.ndarray:
    per_window: dict[float, float] = {}
    for f in sorted(folder.glob("chunk-*-trace.csv.gz")):
        with gzip.open(f, "rt", newline="") as fh:
            for r in csv.reader(fh):
                per_window[float(r[0])] = per_window.get(float(r[0]), 0.0) + float(r[1])
    starts = sorted(per_window)
    assert np.allclose(np.diff(starts), 600.0)
    return np.array([per_window[s] for s in starts])


@pytest.mark.shared_data
def test_servegen_weekly_cycle_slots_and_decomposition(shared_data):
    folder = shared_data(SERVEGEN)
    rate = _servegen_independent(folder)
    assert rate.size == 2016
    assert (round(rate.mean(), 1), round(rate.max(), 1), round(rate.min(), 1)) == (195.8, 583.0, 48.4)

    rw = load(folder)
    prof = profile_traffic(rw)
    d = prof.to_dict()
    w = d["per_window"]
    assert w["n_bins"] == 2016 and w["bin_s"] == 600.0
    assert w["rps"]["mean"] == pytest.approx(rate.mean(), rel=1e-9)
    assert w["rps"]["max"] == pytest.approx(rate.max(), rel=1e-9)
    assert w["rps"]["p99"] == pytest.approx(float(np.quantile(rate, 0.99)), rel=1e-9)
    assert d["per_minute"]["available"] is False and "600 s window" in d["per_minute"]["reason"]

    # slots: none on a relative clock (hours from the trace start are not hours of the day; docs/traffic-profile.md)
    assert d["slots"]["available"] is False and d["slots"]["reason"].startswith("relative clock")
    for key in ("hour_of_day", "hour_weekday"):
        assert d["slots"][key]["available"] is False and "relative clock" in d["slots"][key]["reason"]

    # MSTL: a daily and a weekly component, matching the independent average cycles
    dec = d["decomposition"]
    names = [c["name"] for c in dec["components"]]
    assert names == ["daily", "weekly"]
    daily, weekly = dec["components"]
    assert daily["period_h"] == 24 and weekly["period_h"] == 168
    hourly = rate.reshape(336, 6).mean(axis=1)
    hod_profile = hourly.reshape(14, 24).mean(axis=0)
    assert np.corrcoef(daily["average_cycle_rps"], hod_profile)[0, 1] > 0.9
    dow_profile = hourly.reshape(2, 7, 24).mean(axis=(0, 2))
    weekly_by_day = np.array(weekly["average_cycle_rps"]).reshape(7, 24).mean(axis=1)
    assert np.corrcoef(weekly_by_day, dow_profile)[0, 1] > 0.9
    assert daily["amplitude_rps"] > 20 and weekly["amplitude_rps"] > 50
    # exactly two weeks: MSTL fits every point; the profile says so instead of a strength of 1
    assert weekly["strength"] is None and any("two cycles" in n for n in dec["notes"])
    assert weekly["cycle_correlation"] == pytest.approx(
        float(np.corrcoef(*_detrended_daily_means(prof).reshape(2, 7))[0, 1]), rel=1e-9
    )
    # target from window means, with a day-block bootstrap CI around it
    t = d["targets"]["target"]
    assert t["rps"] == pytest.approx(float(np.quantile(rate, 0.99)), rel=1e-9)
    assert t["ci95"][0] <= t["rps"] <= t["ci95"][1] and "14 days" in t["ci_method"]
    assert d["targets"]["mid_term"]["available"] is False and "4 weeks" in d["targets"]["mid_term"]["reason"]
    assert d["mix_shares"]["available"] is False


def _detrended_daily_means(prof: TrafficProfile) -> np.ndarray:
    hourly = prof.decomposition.series  # the hourly series the profile decomposed, as written
    x = np.array(hourly["observed_rps"]) - np.array(hourly["trend_rps"])
    return x.reshape(14, 24).mean(axis=1)


def test_mix_shares_overall_and_per_hour(bundled):
    path = bundled(AZURE["code"])
    rows = _azure_rows(path)
    spec = MixSpec((Mix("short", {"input_tokens": (0, 1024)}), Mix("long", {"input_tokens": (1024, 4096)})))
    n = len(rows)
    short = sum(1 for r in rows if r[1] < 1024)
    long_ = sum(1 for r in rows if 1024 <= r[1] < 4096)
    other = n - short - long_
    per_hour = Counter((math.floor(r[0] / 3600), "short" if r[1] < 1024 else "long" if r[1] < 4096 else "other")
                       for r in rows)
    prof = profile_traffic(load_trace(path), mix_spec=spec)
    d = prof.to_dict()
    shares = {r["mix"]: r for r in d["mix_shares"]}
    assert shares["short"]["n_requests"] == short and shares["long"]["n_requests"] == long_
    assert shares["other"]["n_requests"] == other
    assert shares["short"]["share"] == pytest.approx(short / n)
    assert d["mix_spec"] == spec.to_dict()
    rows_h = d["mix_shares_per_hour"]["rows"]
    got = {(int(r["hour_start_s"] // 3600), r["mix"]): r["n_requests"] for r in rows_h}
    assert got == dict(per_hour)
    for h in {k[0] for k in per_hour}:
        assert sum(r["share"] for r in rows_h if int(r["hour_start_s"] // 3600) == h) == pytest.approx(1.0)
    # the builder's result holds the profile's own parts: the same shares, typed
    ms = mix_shares(load_trace(path), spec)
    assert isinstance(ms, MixShares) and ms.spec == spec
    assert [(r.mix, r.n_requests) for r in ms.overall] == [("short", short), ("long", long_), ("other", other)]
    assert ms.overall == prof.mix_shares and ms.per_hour == prof.mix_shares_per_hour
    assert {(int(r.hour_start_s // 3600), r.mix): r.n_requests for r in ms.per_hour.rows} == dict(per_hour)


def test_mix_bounded_on_absent_field_is_unavailable(bundled):
    tr = load_trace(bundled(AZURE["conv"]))
    tr2 = RequestTrace(tr.frame.with_columns(pl.lit(None, dtype=pl.Int64).alias("output_tokens")), tr.provenance)
    prof = profile_traffic(tr2, mix_spec=MixSpec((Mix("x", {"output_tokens": (0, 100)}),)))
    assert prof.mix_shares.available is False and "output_tokens" in prof.mix_shares.reason
    assert per_minute_counts(tr2)["output_tokens"].null_count() == per_minute_counts(tr2).height


def _synthetic_trace(times: list[float], origin: str = "epoch", status: list[str] | None = None) -> RequestTrace:
    frame = pl.DataFrame({"start_s": times, "input_tokens": [100] * len(times), "output_tokens": [10] * len(times)})
    if status is not None:
        frame = frame.with_columns(pl.Series("status", status))
    prov = Provenance(source="synthetic", format="synthetic", tool="test", sha256="", time_origin=origin)  # type: ignore[arg-type]
    from bearing_lib.data.trace import conform, validate

    return RequestTrace(validate(conform(frame), prov), prov)


def test_partial_minutes_and_boundaries_by_hand():
    # minute 100 starts at 6000 s. Requests at 6000.0 (minute 100 complete: starts on the boundary),
    # 6030, 6150 (minute 102), 6240 (minute 104, holds the last request: partial, dropped).
    tr = _synthetic_trace([6000.0, 6030.0, 6150.0, 6240.0])
    pm = per_minute_counts(tr)
    assert pm["minute_start_s"].to_list() == [6000.0, 6060.0, 6120.0, 6180.0]
    assert pm["requests"].to_list() == [2, 0, 1, 0]
    # relative clock: bins start at the first request
    rel = _synthetic_trace([10.0, 20.0, 75.0, 130.0, 131.0], origin="relative")
    pm = per_minute_counts(rel)
    assert pm["minute_start_s"].to_list() == [10.0, 70.0]
    assert pm["requests"].to_list() == [2, 1]


def test_too_short_and_timeless_traces_are_refused():
    with pytest.raises(InsufficientDataError, match="no complete minute"):
        profile_traffic(_synthetic_trace([0.5, 10.0, 30.0]))
    prov = Provenance(source="x.json", format="vllm", tool="vllm", sha256="", time_origin="none")
    from bearing_lib.data.trace import conform

    tr = RequestTrace(conform(pl.DataFrame({"latency_ms": [1.0, 2.0]})), prov)
    with pytest.raises(InsufficientDataError, match="no per-request times"):
        per_minute_counts(tr)
    with pytest.raises(InsufficientDataError, match="no per-request times"):
        profile_traffic(tr)


def test_mooncake_mix_shares_use_the_replayed_cache_hit_ratio(bundled):
    # independent prefix-cache replay: infinite cache, 512-token blocks, requests in file (= time) order;
    # a request's cached tokens are its leading already-seen blocks (the last block is partial)
    _, rows = _mooncake_independent(bundled(MOONCAKE))
    seen: set[int] = set()
    hits = 0
    for r in rows:
        lead = 0
        for h in r["hash_ids"]:
            if h not in seen:
                break
            lead += 1
        cached = min(lead * 512, r["input_length"])
        hits += cached / r["input_length"] >= 0.5
        seen.update(r["hash_ids"])
    assert round(hits / len(rows), 3) == 0.425  # the data README: 42.5 %
    spec = MixSpec((Mix("hit", {"cache_hit_ratio": (0.5, 2.0)}), Mix("miss", {})))
    prof = profile_traffic(load_trace(bundled(MOONCAKE)), mix_spec=spec, n_boot=50)
    shares = {m["mix"]: m for m in prof.to_dict()["mix_shares"]}
    assert shares["hit"]["n_requests"] == hits
    assert shares["miss"]["n_requests"] == len(rows) - hits


def test_load_test_output_is_not_profiled(bundled):
    tr = load_trace(bundled("loadtests/lmbenchmark-llm-d-exp2/vllm-70b-2replicas/LMBench_short_input_qps1.csv"))
    with pytest.raises(ParameterError, match="load-test steps"):
        profile_traffic(tr)
