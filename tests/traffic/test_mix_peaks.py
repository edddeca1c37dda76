"""Peaks per mix: each mix's own per-minute peak, against the share-of-overall method.

Expected values come from the raw Azure CSV read with ``csv`` and binned with
``collections.Counter`` (not bearing's binning), and from a hand-made trace whose two mixes
peak in different minutes.
"""

from __future__ import annotations

import csv
import math
from collections import Counter
from datetime import UTC, datetime

import numpy as np
import polars as pl
import pytest

from bearing_lib import load_trace
from bearing_lib.data.mixes import Mix, MixSpec
from bearing_lib.traffic.dataset import profile_dataset
from bearing_lib.traffic.profile import profile_traffic
from tests.factories import request_trace

AZURE_CODE = "traces/azure-llm-inference-2023/AzureLLMInferenceTrace_code.csv"
SPEC = MixSpec([Mix("short", {"input_tokens": (0, 1000)}), Mix("long", {"input_tokens": (1000, 1e9)})])


def _linear(v: list[float], q: float) -> float:
    s = sorted(v)
    pos = (len(s) - 1) * q
    i = math.floor(pos)
    return s[i] + (s[min(i + 1, len(s) - 1)] - s[i]) * (pos - i)


def test_hand_made_mixes_peak_in_different_minutes():
    # minutes 0-9: mix short sends 10 a minute but 40 in minute 3, mix long 10 a minute but 40 in minute 7, every
    # minute's requests at its middle; a request at 600.5 s closes minute 9. Minute 0 holds the first request
    # (at 30 s, not on the boundary), so it is partial and left out: 9 complete minutes, 1-9
    starts, lens = [], []
    for minute in range(10):
        for _name, tokens, busy in (("short", 100, 3), ("long", 5000, 7)):
            n = 40 if minute == busy else 10
            starts += [minute * 60 + 30 + i * 0.01 for i in range(n)]
            lens += [tokens] * n
    starts.append(600.5)
    lens.append(100)
    tr = request_trace({"start_s": starts, "input_tokens": lens, "output_tokens": [10] * len(lens)})
    peaks = profile_traffic(tr, mix_spec=SPEC, n_boot=0).mix_peaks
    overall = [20.0] * 9
    overall[3 - 1] = overall[7 - 1] = 50.0
    share_long = 120 / 240
    p99_overall = _linear(overall, 0.99) / 60  # 50 / 60: two minutes at 50
    own = _linear([10.0] * 8 + [40.0], 0.99) / 60  # 10 + 30 x 0.92 = 37.6 a minute
    assert peaks.overall_target_rps == pytest.approx(p99_overall)
    for mix in ("short", "long"):
        r = peaks.row(mix)
        assert r.share == pytest.approx(share_long)
        assert r.target_rps == pytest.approx(own)
        assert r.max_rps == pytest.approx(40 / 60)
        assert r.mean_rps == pytest.approx(120 / 9 / 60)
        assert r.peak_to_mean == pytest.approx(40 / (120 / 9))
        assert r.share_method_rps == pytest.approx(share_long * p99_overall)  # 25 req/min against its own 37.6
        assert r.own_over_share == pytest.approx(own / (share_long * p99_overall))
        assert r.understated
    assert "short: own P99" in peaks.statement


def _azure_code_per_mix(path) -> tuple[list[int], Counter, Counter]:  # noqa: ANN001
    times, long_ = [], []
    with open(path, newline="") as fh:
        for r in csv.DictReader(fh):
            ts = r["TIMESTAMP"]
            t = datetime.strptime(ts[:26], "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=UTC).timestamp()
            times.append(t + int(ts[26:] or 0) * 1e-7)
            long_.append(int(r["ContextTokens"]) >= 1000)
    first, last = math.ceil(min(times) / 60), math.floor(max(times) / 60) - 1
    keys = list(range(first, last + 1))
    short_c = Counter(math.floor(t / 60) for t, lg in zip(times, long_, strict=True) if not lg)
    long_c = Counter(math.floor(t / 60) for t, lg in zip(times, long_, strict=True) if lg)
    return keys, short_c, long_c


@pytest.mark.parametrize("which,n_minutes,short_understated", [("code", 56, False), ("conv", 58, True)])
def test_azure_mix_peaks_match_an_independent_count(bundled, tmp_path, which, n_minutes, short_understated):
    # conv: the short-prompt mix's own P99 (5.05 req/s) is 1.31x its share (46.6 %) of the overall P99 (8.24):
    # its busiest minutes are not the overall busiest ones; code: within 10 %
    path = bundled(AZURE_CODE.replace("_code", f"_{which}"))
    keys, short_c, long_c = _azure_code_per_mix(path)
    short = [short_c.get(k, 0) for k in keys]
    long_ = [long_c.get(k, 0) for k in keys]
    total = [a + b for a, b in zip(short, long_, strict=True)]
    prof = profile_traffic(load_trace(path), mix_spec=SPEC, n_boot=0)
    peaks = prof.mix_peaks
    assert peaks.n_bins == len(keys) == n_minutes and peaks.bin_s == 60.0
    assert peaks.row("short").understated is short_understated and not peaks.row("long").understated
    assert peaks.overall_target_rps == pytest.approx(_linear(total, 0.99) / 60, rel=1e-12)
    for mix, v in (("short", short), ("long", long_)):
        r = peaks.row(mix)
        assert r.n_requests == sum(v)
        assert r.share == pytest.approx(sum(v) / sum(total), rel=1e-12)
        assert r.p95_rps == pytest.approx(_linear(v, 0.95) / 60, rel=1e-12)
        assert r.p99_rps == pytest.approx(_linear(v, 0.99) / 60, rel=1e-12)
        assert r.max_rps == pytest.approx(max(v) / 60, rel=1e-12)
        assert r.mean_rps == pytest.approx(float(np.mean(v)) / 60, rel=1e-12)
        assert r.share_method_rps == pytest.approx(sum(v) / sum(total) * _linear(total, 0.99) / 60, rel=1e-12)
    d = prof.to_dict()["mix_peaks"]
    assert [r["mix"] for r in d["rows"]] == ["long", "short"]
    # the streaming (Parquet) path gives the same numbers
    pq = tmp_path / "code.parquet"
    load_trace(path).frame.write_parquet(pq)
    streamed = profile_dataset(str(pq), mix_spec=SPEC, n_boot=0, time_origin="epoch").mix_peaks
    for mix in ("short", "long"):
        assert streamed.row(mix).to_dict() == pytest.approx(peaks.row(mix).to_dict())


def test_one_mix_gives_no_mix_peaks(bundled):
    prof = profile_traffic(load_trace(bundled(AZURE_CODE)), n_boot=0)
    assert prof.mix_peaks is None and "mix_peaks" not in prof.to_dict()


def test_mix_peaks_ignore_rows_outside_the_bins():
    from bearing_lib.traffic.mix_peaks import mix_peaks

    counts = pl.DataFrame({"bin_start_s": [0.0, 60.0, 999.0], "mix": ["a", "a", "a"], "requests": [6, 12, 600]})
    p = mix_peaks(counts, np.array([0.0, 60.0]), 60.0, quantile_level=0.5, basis="test")
    assert p.row("a").max_rps == pytest.approx(0.2) and p.row("a").target_rps == pytest.approx(0.15)
