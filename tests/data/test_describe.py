"""``describe_dataset``: the typed description ``bearing inspect`` prints, and its robustness to
epoch times in the wrong unit (the crash ``ValueError: year 57881 is out of range``).

Expected dates are computed here with ``datetime`` from the numbers written to the files.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from typer.testing import CliRunner

from bearing_lib.cli.main import app
from bearing_lib.data.describe import (
    EPOCH_MAX_S,
    EPOCH_MIN_S,
    TimeSpan,
    describe_dataset,
    guess_epoch_unit,
    utc_iso,
)
from bearing_lib.loaders import load

runner = CliRunner()
T0 = datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)  # 1,700,000,000 s after the epoch
T0_S = T0.timestamp()


def _csv(tmp_path, scale: float, name: str = "t.csv"):
    p = tmp_path / name
    rows = [("a", 0.0, 0.5, "ok"), ("b", 60.0, 61.25, "ok"), ("c", 120.0, 121.5, "error")]
    body = "".join(f"{r},{(T0_S + s) * scale!r},{(T0_S + e) * scale!r},{(e - s) * 1000:g},{st}\n"
                   for r, s, e, st in rows)
    p.write_text("request_id,start_s,end_s,latency_ms,status\n" + body)
    return p


def test_seconds_trace_description_and_dict(tmp_path):
    ds = load(_csv(tmp_path, 1.0))
    d = describe_dataset(ds)
    assert (d.format, d.kind, d.rows) == ("bearing-canonical", "requests", 3)
    assert d.span is not None
    assert d.span.start_s == T0_S and d.span.end_s == T0_S + 121.5 and d.span.seconds == 121.5
    assert d.span.first_utc == "2023-11-14T22:13:20+00:00"
    assert d.span.last_utc == datetime.fromtimestamp(T0_S + 121.5, tz=UTC).isoformat(timespec="seconds")
    assert d.span.unit_guess is None and d.span.is_date()
    assert d.status_counts == (("ok", 2), ("error", 1))
    assert d.fields == ("request_id", "start_s", "end_s", "latency_ms", "status")
    assert "ttft_ms" in d.absent
    doc = json.loads(json.dumps(d.to_dict()))
    assert doc["rows"] == 3 and doc["status_counts"] == {"ok": 2, "error": 1}
    assert doc["span"]["seconds"] == 121.5 and doc["span"]["first_utc"] == "2023-11-14T22:13:20+00:00"
    assert doc["findings"] == []
    lines = d.lines()
    assert lines[3] == ("span:     121.5 s (2.0 min), clock epoch, UTC; 2023-11-14T22:13:20+00:00 .. "
                        "2023-11-14T22:15:21+00:00")
    assert lines[-2:] == ["findings: none", f"sha256:   {ds.provenance.sha256}"]


@pytest.mark.parametrize("scale,unit,word", [(1e3, "ms", "milliseconds"), (1e6, "us", "microseconds"),
                                             (1e9, "ns", "nanoseconds")])
def test_epoch_times_in_a_smaller_unit_are_described_not_crashed(tmp_path, scale, unit, word):
    # the loaders refuse such times at the edge (below); a dataset built in Python can still hold
    # them, and describing it must not crash
    d = describe_dataset(_scaled(load(_csv(tmp_path, 1.0)), scale))
    assert d.span is not None and d.span.unit_guess == unit and not d.span.is_date()
    assert d.span.first_utc is None and d.span.start_s == pytest.approx(T0_S * scale)
    assert d.span.seconds == pytest.approx(121.5 * scale)
    finding = d.findings[-1]
    assert finding.code == f"epoch_times_look_like_{unit}" and finding.level == "warning"
    assert f"read as epoch {word} it is 2023-11-14T22:13:20+00:00 .. 2023-11-14T22:15:21+00:00" in finding.message
    assert "--format generic --mapping" in finding.message and f"'<column>: {unit}'" in finding.message
    span_line = next(x for x in d.lines() if x.startswith("span:"))
    assert "as found" in span_line and "not epoch seconds (see findings)" in span_line


def _scaled(ds, scale: float):
    import polars as pl

    from bearing_lib.data.trace import RequestTrace

    f = ds.frame.with_columns(pl.col("start_s") * scale, pl.col("end_s") * scale)
    return RequestTrace(frame=f, provenance=ds.provenance)


def test_inspect_epoch_milliseconds_is_a_clear_error_naming_the_unit_and_the_fix(tmp_path):
    """The crash of the issue (``year 57881 is out of range``) is now one error at the loader's edge."""
    r = runner.invoke(app, ["inspect", str(_csv(tmp_path, 1e3))])
    assert r.exit_code == 1, r.output
    assert "year" not in r.output and "Traceback" not in r.output
    assert "looks like epoch milliseconds" in r.output and "divide by 1e3" in r.output


def test_epoch_times_that_are_no_date_in_any_unit(tmp_path):
    # a plausible start, and an end beyond year 9999 (datetime cannot hold it): no crash, a finding
    p = tmp_path / "t.csv"
    p.write_text(f"request_id,start_s,end_s\na,{T0_S!r},{T0_S + 1!r}\n")
    ds = load(p)
    import polars as pl

    from bearing_lib.data.trace import RequestTrace

    d = describe_dataset(RequestTrace(frame=ds.frame.with_columns(pl.lit(1e20).alias("end_s")),
                                      provenance=ds.provenance))
    assert d.span is not None and d.span.unit_guess is None and d.span.last_utc is None
    assert d.findings[-1].code == "implausible_epoch_times"
    assert "1e+20" in d.findings[-1].message


def test_guess_epoch_unit_bounds():
    assert guess_epoch_unit(EPOCH_MIN_S) is None and guess_epoch_unit(EPOCH_MAX_S) is None
    assert guess_epoch_unit(EPOCH_MAX_S * 1.01) is None  # past 2100 in s, before 2001 in ms
    assert guess_epoch_unit(EPOCH_MIN_S * 1e3) == "ms" and guess_epoch_unit(EPOCH_MAX_S * 1e3) == "ms"
    assert guess_epoch_unit(EPOCH_MIN_S * 1e6) == "us" and guess_epoch_unit(EPOCH_MIN_S * 1e9) == "ns"
    assert guess_epoch_unit(EPOCH_MAX_S * 1e10) is None
    assert guess_epoch_unit(float("nan")) is None and guess_epoch_unit(float("inf")) is None
    assert datetime.fromtimestamp(EPOCH_MAX_S, tz=UTC) == datetime(2100, 1, 1, tzinfo=UTC)


def test_utc_iso_never_raises():
    assert utc_iso(0.0) == "1970-01-01T00:00:00+00:00"
    for bad in (1.7e12, -1e15, float("inf"), float("nan"), None):
        assert utc_iso(bad) is None


def test_relative_and_untimed_spans():
    assert TimeSpan(time_origin="relative", timezone="none", start_s=0.0, end_s=30.0).seconds == 30.0
    assert TimeSpan(time_origin="none", timezone="none").seconds is None


def test_rates_description(bundled, tmp_path):
    from pathlib import Path

    src = Path(__file__).resolve().parents[1] / "fixtures" / "servegen" / "mm-image"
    for p in src.iterdir():
        (tmp_path / p.name).write_bytes(p.read_bytes())
    d = describe_dataset(load(tmp_path))
    assert d.kind == "rates" and d.rows == 144 and d.clients == 1
    assert d.span is not None and d.span.seconds == 86_400 and d.span.window_s == 600
    assert d.rate_peak_rps is not None and d.rate_peak_rps >= d.rate_mean_rps >= d.rate_min_rps
    assert json.loads(json.dumps(d.to_dict()))["kind"] == "rates"


def test_str_is_the_printed_lines(tmp_path):
    d = describe_dataset(load(_csv(tmp_path, 1.0)))
    assert str(d) == "\n".join(d.lines()) and str(d).startswith("format:   bearing-canonical")


def test_generic_mapping_with_the_wrong_time_unit_says_which_unit(tmp_path):
    data = tmp_path / "log.csv"
    ms = int(T0_S * 1000)
    data.write_text(f"id,sent,took_s\na,{ms},0.25\nb,{ms + 1000},0.5\n")
    yml = tmp_path / "map.yaml"
    yml.write_text("columns: {request_id: id, start_s: sent, latency_ms: took_s}\nunits: {sent: s, took_s: s}\n")
    from bearing_lib.common.errors import BadValueError

    with pytest.raises(BadValueError, match="looks like epoch milliseconds"):
        load(data, format="generic", mapping=yml)


@pytest.mark.shared_data
def test_inspect_lists_the_failed_requests_error_texts(shared_data):
    """A floor's statement points at ``bearing inspect`` for the error texts, which it did not print (a new user's
    case, round 21). By hand from the raw JTL (csv module): the failed samples (``success`` false) by
    ``responseCode: failureMessage``, most frequent first, Transaction Controller parent rows left out as the loader
    leaves them (``responseMessage`` "Number of samples in transaction : …": 108 failed parents of the same 109
    samples); an unknown offered load reads "offered load unknown"."""
    import csv
    from collections import Counter

    p = shared_data("loadtests/jmeter/kuprich-jtl-viewer-fakestore/fakestore_v2.jtl")
    with p.open(newline="", encoding="utf-8") as fh:
        raw = Counter(f"{r['responseCode']}: {r['failureMessage']}" for r in csv.DictReader(fh)
                      if r["success"].lower() == "false"
                      and not r["responseMessage"].startswith("Number of samples in transaction"))
    assert sum(raw.values()) == 109
    d = describe_dataset(load(p))
    assert d.error_counts == tuple(raw.most_common(3))
    (line,) = [x for x in d.lines() if x.startswith("errors:")]
    assert line == "errors:   " + "; ".join(f"{n:,}× {t!r}" for t, n in raw.most_common(3))
    from bearing_lib.data.describe import StepSummary, _load_text

    assert _load_text(StepSummary("r", 0, None, None, 3)) == "offered load unknown"
    assert _load_text(StepSummary("r", 0, float("nan"), "rps", 3)) == "offered load unknown"
    assert _load_text(StepSummary("r", 0, 2.0, "rps", 3)) == "2 rps"
