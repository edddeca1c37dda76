"""The unit check of a production trace's relative clock (bearing_lib/data/timeunit.py), on a real trace.

The Azure LLM inference conversation trace (read in place from $BEARING_SHARED_DATA) is converted here,
in a temporary folder, to a canonical CSV whose ``start_s`` holds milliseconds from the first request:
the file a user writes when they forget to divide by 1000. The truth (span, median gap) is computed
from the raw CSV with polars alone, not with bearing's loaders.
"""

from __future__ import annotations

import polars as pl
import pytest

from bearing_lib.app import pipeline
from bearing_lib.common.errors import BadValueError
from bearing_lib.data.timeunit import SUSPECT_MEDIAN_GAP_S, check_clock

AZURE = "traces/azure-llm-inference-2023/AzureLLMInferenceTrace_conv.csv"


def _raw_seconds(path) -> pl.DataFrame:
    raw = pl.read_csv(path)
    t = raw["TIMESTAMP"].str.to_datetime(time_unit="us")
    return pl.DataFrame({"start_s": (t - t.min()).dt.total_microseconds() / 1e6,
                         "input_tokens": raw["ContextTokens"], "output_tokens": raw["GeneratedTokens"]})


@pytest.fixture(scope="module")
def azure_ms(tmp_path_factory):
    import os
    from pathlib import Path

    from tests.conftest import ENV

    base = os.environ.get(ENV)
    if not base:
        pytest.skip(f"{ENV} is not set")
    src = Path(base) / AZURE
    sec = _raw_seconds(src)
    folder = tmp_path_factory.mktemp("ms")
    ms = folder / "azure_conv_relative_ms.csv"
    sec.with_columns(pl.col("start_s") * 1000.0).write_csv(ms)
    return sec, ms


@pytest.mark.shared_data
def test_a_real_trace_in_milliseconds_is_refused_naming_the_file_and_column(azure_ms):
    sec, ms = azure_ms
    s = sec["start_s"].sort()
    span_h_if_seconds = float(s[-1]) * 1000 / 3600  # the 972.70 h of the issue
    median_gap_ms = float(s.diff().drop_nulls().median()) * 1000
    assert round(span_h_if_seconds, 2) == 972.70 and median_gap_ms >= SUSPECT_MEDIAN_GAP_S
    with pytest.raises(BadValueError) as err:
        pipeline.load_production(ms)
    msg = str(err.value)
    assert msg.startswith(f"{ms}, field 'start_s': the production trace (bearing-canonical)")
    assert f"{sec.height:,} requests span {span_h_if_seconds:,.2f} h" in msg
    assert f"median gap of {median_gap_ms:,.1f} s" in msg and f"span {float(s[-1]) / 60:,.1f} min" in msg
    assert "time_unit=ms" in msg


@pytest.mark.shared_data
def test_declared_milliseconds_read_in_their_unit_with_a_finding(azure_ms):
    sec, ms = azure_ms
    trace = pipeline.load_production(ms, options={"time_unit": "ms"})
    assert trace.frame["start_s"].max() == pytest.approx(float(sec["start_s"].max()), abs=1e-6)
    assert any(f.code == "time_unit_declared" for f in trace.provenance.findings)
    assert check_clock(trace) is None  # a declared unit is never second-guessed
    # declared seconds are taken as said (a sparse service is possible)
    assert pipeline.load_production(ms, options={"time_unit": "s"}).frame["start_s"].max() == pytest.approx(
        float(sec["start_s"].max()) * 1000, rel=1e-12)


@pytest.mark.shared_data
def test_the_same_trace_in_seconds_passes(azure_ms, tmp_path):
    sec, _ = azure_ms
    path = tmp_path / "azure_conv_relative_s.csv"
    sec.write_csv(path)
    check = check_clock(pipeline.load(path))
    assert check is not None and check.verdict == "seconds"
    assert check.median_gap_s == pytest.approx(float(sec["start_s"].sort().diff().drop_nulls().median()))


def test_end_times_and_latencies_decide_the_unit(tmp_path):
    # 50 requests 2 s apart (in ms), each 1.5 s long: end_s - start_s = 1500 "s" against latency_ms 1500
    starts = [i * 2000.0 for i in range(50)]
    frame = pl.DataFrame({"start_s": starts, "end_s": [t + 1500.0 for t in starts], "latency_ms": [1500.0] * 50})
    path = tmp_path / "ms_with_latency.csv"
    frame.write_csv(path)
    check = check_clock(pipeline.load(path))
    assert check.verdict == "not_seconds" and check.looks_like == "ms" and check.duration_ratio == pytest.approx(1000)
    with pytest.raises(BadValueError, match="each request's end_s - start_s is 1,000 x its latency_ms"):
        pipeline.load_production(path)
    # the same in seconds: ratio 1, and a median gap of 2 s is no suspicion
    frame.with_columns(pl.col("start_s") / 1000, pl.col("end_s") / 1000).write_csv(path)
    assert check_clock(pipeline.load(path)).verdict == "seconds"


def test_a_generic_mapping_with_a_declared_unit_is_not_checked(tmp_path):
    path = tmp_path / "t.csv"
    pl.DataFrame({"sent": [i * 60_000.0 for i in range(200)]}).write_csv(path)
    undeclared = {"columns": {"start_s": "sent"}, "time_origin": "relative"}
    with pytest.raises(BadValueError, match="field 'sent'"):
        pipeline.load_production(path, "generic", options={"mapping": undeclared})
    declared = {**undeclared, "units": {"sent": "ms"}}
    trace = pipeline.load_production(path, "generic", options={"mapping": declared})
    assert trace.frame["start_s"].max() == pytest.approx(199 * 60.0)
