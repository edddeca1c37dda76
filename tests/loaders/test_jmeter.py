"""Apache JMeter JTL loaders.

``tests/fixtures/jmeter/HTMLReportTestFile.csv`` is Apache-2.0 (apache/jmeter, see ATTRIBUTION.md);
the other JTLs come from repositories without a licence and are read in place. Expected
values come from the raw files parsed with the csv module inside each test.
"""

from __future__ import annotations

import csv
import re
from collections import Counter
from pathlib import Path

import pytest

from bearing_lib import BadValueError, ParameterError, UnsupportedVersionError, load_trace
from bearing_lib.loaders import detect

APACHE = Path(__file__).resolve().parents[1] / "fixtures" / "jmeter" / "HTMLReportTestFile.csv"
KUPRICH = "loadtests/jmeter/kuprich-jtl-viewer-fakestore/fakestore_v2.jtl"
SSL = "loadtests/jmeter/perf-eng-platform-ssl-errors/results.jtl"
IONNINJA = "loadtests/jmeter/ionninja-api-loadtest/results.jtl"
LEGACY = "loadtests/jmeter/gilbertmiao-legacy-pipe-noheader/results.jtl"
LEGACY_MAP = [
    "timeStamp", "elapsed", "label", "responseCode", "threadName", "success", "bytes", "grpThreads", "allThreads",
    "Latency", "SampleCount", "ErrorCount", "URL",
]
TC = re.compile(r"^Number of samples in transaction : \d+, number of failing samples : \d+")


def _rows(p, **kw):
    with open(p, newline="") as fh:
        return list(csv.DictReader(fh, **kw))


def test_apache_testfile_units_and_ttfb_option():
    rows = _rows(APACHE)
    tr = load_trace(APACHE)
    assert tr.provenance.format == "jmeter-jtl-csv"
    assert len(tr) == len(rows) == 255
    f = tr.frame.sort("source_row")
    assert f["start_s"].to_list() == pytest.approx([int(r["timeStamp"]) / 1000 for r in rows])
    assert f["latency_ms"].to_list() == [float(r["elapsed"]) for r in rows]
    assert f["end_s"].to_list() == pytest.approx([(int(r["timeStamp"]) + int(r["elapsed"])) / 1000 for r in rows])
    bad = [r for r in rows if r["success"] == "false"]
    assert (f["status"] == "error").sum() == len(bad) == 3
    assert all(e.startswith("400: ") for e in f.filter(f["status"] == "error")["error"])
    assert set(f["offered_load"]) == {1.0} and set(f["offered_load_unit"]) == {"concurrency"}  # allThreads 1
    assert f["ttft_ms"].is_null().all()
    t2 = load_trace(APACHE, ttfb_as_ttft=True).frame.sort("source_row")
    assert t2["ttft_ms"].to_list() == [float(r["Latency"]) for r in rows]


def test_timestamp_end_option():
    rows = _rows(APACHE)
    f = load_trace(APACHE, timestamp="end").frame.sort("source_row")
    assert f["start_s"].to_list() == pytest.approx([(int(r["timeStamp"]) - int(r["elapsed"])) / 1000 for r in rows])


@pytest.mark.shared_data
def test_transaction_controller_rows_excluded_and_truncated_line(shared_data):
    p = shared_data(KUPRICH)
    with open(p, newline="") as fh:
        raw = list(csv.reader(fh))
    header, body = raw[0], raw[1:]
    assert len(body[-1]) < len(header)  # the file ends in a cut line
    full = [dict(zip(header, r, strict=True)) for r in body if len(r) == len(header)]
    tc = [r for r in full if TC.match(r["responseMessage"])]
    children = [r for r in full if not TC.match(r["responseMessage"])]
    tr = load_trace(p)
    assert len(tr) == len(children) == 4955
    codes = {x.code: x for x in tr.provenance.findings}
    assert codes["transaction_controller_rows"].count == len(tc) == 1484
    assert codes["truncated_last_line"].count == 1
    assert tr.frame.filter(tr.frame["status"] != "ok").height == sum(1 for r in children if r["success"] == "false")
    # parents carry an empty dataType and duplicate their children's time: their labels are gone
    assert {r["dataType"] for r in tc} == {""}
    assert not set(tr.frame["request_id"]) & {str(i + 2) for i, r in enumerate(full) if TC.match(r["responseMessage"])}
    # Ultimate Thread Group steps 1..6 threads: each step's level is the threads most samples in it report
    steps = tr.frame.filter(tr.frame["step"].is_not_null())
    assert sorted(set(steps["offered_load"])) == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    own = {str(i + 2): int(r["allThreads"]) for i, r in enumerate(full)}
    agree = sum(1 for rid, lvl in zip(steps["request_id"], steps["offered_load"], strict=True) if own[rid] == lvl)
    assert agree / steps.height > 0.95


@pytest.mark.shared_data
def test_non_numeric_response_codes(shared_data):
    p = shared_data(SSL)
    rows = _rows(p)
    tr = load_trace(p)
    failed = [r for r in rows if r["success"] == "false"]
    assert Counter(r["responseCode"] for r in failed) == {"Non HTTP response code: javax.net.ssl.SSLException": 100}
    f = tr.frame
    assert (f["status"] == "error").sum() == 100
    assert f.filter(f["status"] == "error")["error"].str.contains("SSLException").all()
    assert any(x.code == "non_numeric_response_code" and x.count == 100 for x in tr.provenance.findings)


@pytest.mark.shared_data
def test_ramp_and_plateau_steps(shared_data):
    p = shared_data(IONNINJA)
    rows = _rows(p)
    tr = load_trace(p)
    assert len(tr) == len(rows) == 10_000
    f = tr.frame.sort("source_row")
    assert f["latency_ms"].sum() == sum(int(r["elapsed"]) for r in rows)
    # the level of each step is read from allThreads, never from the file name
    in_step = f.filter(f["step"].is_not_null())
    own = [int(rows[i - 2]["allThreads"]) for i in in_step["source_row"]]
    assert sum(1 for a, b in zip(own, in_step["offered_load"], strict=True) if a == b) / len(own) > 0.95


@pytest.mark.shared_data
def test_legacy_pipe_file_needs_a_column_map(shared_data):
    p = shared_data(LEGACY)
    assert detect(p).name == "jmeter-jtl-noheader"
    with pytest.raises(ParameterError, match="does not guess") as exc:
        load_trace(p)
    assert "timeStamp" in str(exc.value)  # the likely map is suggested, not applied
    assert "on the command line `--option 'columns=[" in str(exc.value) and "--option delimiter='|'" in str(exc.value)
    rows = list(csv.reader(open(p, newline=""), delimiter="|"))
    tr = load_trace(p, columns=LEGACY_MAP, min_plateau_s=5)
    assert tr.provenance.format == "jmeter-jtl-noheader"
    f = tr.frame.sort("source_row")
    assert len(tr) == len(rows) == 61
    assert f["latency_ms"].to_list() == [float(r[1]) for r in rows]
    assert f["start_s"].to_list() == pytest.approx([int(r[0]) / 1000 for r in rows])
    assert set(f["status"]) == {"ok"}  # 200 and 304, success=true
    assert set(f["offered_load"].drop_nulls()) == {10.0}
    with pytest.raises(ParameterError, match="12 fields but the file has 13"):
        load_trace(p, columns=LEGACY_MAP[:-1])


def test_header_without_required_columns(tmp_path):
    p = tmp_path / "r.jtl"
    p.write_text("timeStamp,elapsed,label,responseCode\n1700000000000,5,x,200\n")
    with pytest.raises(UnsupportedVersionError) as exc:
        load_trace(p)
    assert exc.value.tool == "Apache JMeter" and exc.value.missing == ["success"]


def test_formatted_timestamp_is_refused(tmp_path):
    p = tmp_path / "r.jtl"
    p.write_text("timeStamp,elapsed,label,success\n2024/01/01 10:00:00.000,5,x,true\n")
    with pytest.raises(BadValueError, match="timestamp_format=ms"):
        load_trace(p)


def test_429_and_timeout_statuses(tmp_path):
    p = tmp_path / "r.jtl"
    p.write_text(
        "timeStamp,elapsed,label,responseCode,responseMessage,success,failureMessage,allThreads\n"
        "1700000000000,5,a,200,OK,true,,1\n"
        "1700000000100,6,a,429,Too Many Requests,false,,1\n"
        "1700000000200,30000,a,Non HTTP response code: java.net.SocketTimeoutException,Read timed out,false,,1\n"
        "1700000000300,7,a,500,Server Error,false,,1\n"
    )
    f = load_trace(p).frame.sort("source_row")
    assert f["status"].to_list() == ["ok", "rejected", "timeout", "error"]


@pytest.mark.shared_data
def test_plateau_steps_are_reported(shared_data):
    tr = load_trace(shared_data(KUPRICH))
    s = tr.steps
    assert s["offered_load"].to_list() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    assert s["offered_load_unit"].unique().to_list() == ["concurrency"]
    # each step's duration is its plateau length; every sample of a step starts inside it
    for row in s.iter_rows(named=True):
        starts = tr.frame.filter(tr.frame["step"] == row["step"])["start_s"]
        assert starts.max() - starts.min() <= row["duration_s"]


def test_invocations_appended_to_one_file_are_separate_runs(tmp_path):
    # JMeter appends each invocation to the same -l file: two runs of 1 thread for 30 s (one sample a second), ten
    # minutes apart. Without the split one "1 threads" plateau spanned the silence; now two runs, each its own step
    rows = ["timeStamp,elapsed,label,success,allThreads"]
    t0 = 1_700_000_000_000
    for start in (0, 630_000):
        rows += [f"{t0 + start + 1000 * i},200,a,true,1" for i in range(31)]
    p = tmp_path / "results.jtl"
    p.write_text("\n".join(rows) + "\n")
    tr = load_trace(p)
    f = tr.frame
    assert sorted(set(f["run_id"])) == [tmp_path.name, f"{tmp_path.name}#2"]
    assert f.group_by("run_id").len().sort("run_id")["len"].to_list() == [31, 31]
    s = tr.steps.sort("run_id")
    assert s["run_id"].to_list() == [tmp_path.name, f"{tmp_path.name}#2"] and s["step"].to_list() == [0, 0]
    assert all(d <= 31.0 for d in s["duration_s"])  # each plateau is its own 30 s, not 660 s
    finding = next(x for x in tr.provenance.findings if x.code == "appended_runs")
    assert "2 runs in one file" in finding.message
    # a sample still running through a long pause keeps one run: a 200 s request, then the next after it ends
    p2 = tmp_path / "long.jtl"
    p2.write_text("timeStamp,elapsed,label,success,allThreads\n"
                  f"{t0},200000,a,true,1\n{t0 + 200_500},1000,a,true,1\n")
    assert set(load_trace(p2).frame["run_id"]) == {tmp_path.name}
    # a test's own think time (review finding): 1 thread, 40 s requests, 130 s think, for 40 samples: every silence is
    # 130 s, the file's usual time between starts is 170 s, so nothing splits (it made 40 runs of one sample)
    p3 = tmp_path / "think.jtl"
    p3.write_text("timeStamp,elapsed,label,success,allThreads\n"
                  + "".join(f"{t0 + 170_000 * i},40000,a,true,1\n" for i in range(40)))
    tr3 = load_trace(p3)
    assert set(tr3.frame["run_id"]) == {tmp_path.name} and tr3.steps.height == 1
    assert not any(x.code == "appended_runs" for x in tr3.provenance.findings)
    # and the split can be switched off
    assert set(load_trace(p, split_runs=False).frame["run_id"]) == {tmp_path.name}


@pytest.mark.shared_data
def test_the_ssl_errors_file_holds_five_invocations(shared_data):
    # raw (no bearing): sorted by timeStamp, the gaps between one sample's end and the next start exceed 120 s four
    # times, at 348, 609, 1172 and 4872 s from the first sample: 200, 50, 50, 50, 50 samples
    p = shared_data(SSL)
    rows = sorted(_rows(p), key=lambda r: int(r["timeStamp"]))
    t = [(int(r["timeStamp"]) / 1000, (int(r["timeStamp"]) + int(r["elapsed"])) / 1000) for r in rows]
    sizes, busy, n = [], t[0][1], 1
    for a, b in t[1:]:
        if a - busy >= 120:
            sizes.append(n)
            n = 0
        n += 1
        busy = max(busy, b)
    sizes.append(n)
    assert sizes == [200, 50, 50, 50, 50]
    f = load_trace(p).frame
    got = f.group_by("run_id").len()
    assert sorted(got["len"].to_list(), reverse=True) == sorted(sizes, reverse=True) and got.height == 5


def test_a_second_file_does_not_take_the_name_of_an_appended_run(tmp_path):
    # review finding: a.jtl holds two appended runs (named after the folder: G and G#2); b.jtl in the same folder is
    # run G too and was renamed G#2, so two limits shared one run id. fit_limits gives it a suffix no run carries
    from bearing_lib.limits.fit import fit_limits

    d = tmp_path / "G"
    d.mkdir()
    t0 = 1_700_000_000_000
    head = "timeStamp,elapsed,label,success,allThreads\n"
    (d / "a.jtl").write_text(head + "".join(f"{t0 + 1000 * i},200,a,true,1\n" for i in range(31))
                             + "".join(f"{t0 + 630_000 + 1000 * i},200,a,true,1\n" for i in range(31)))
    (d / "b.jtl").write_text(head + "".join(f"{t0 + 1000 * i},200,a,true,1\n" for i in range(31)))
    res = fit_limits([load_trace(d / "a.jtl"), load_trace(d / "b.jtl")], "p99(latency) <= 1s", mixes="none",
                     n_boot=0)
    runs = [m.run_id for m in res.limits]
    assert sorted(runs) == ["G", "G#2", "G#3"] and len(set(runs)) == len(runs)


@pytest.mark.shared_data
def test_threads_of_one_sample_each_are_an_arrival_schedule(shared_data):
    """ionninja's run (a new user's case, round 21): 10,000 threads of one sample each over about a minute, about one
    thread alive at a time, read "1 concurrency". By hand with the csv module: the samples at allThreads 1 after
    sorting, their distinct threadName values, and the span of their timeStamps; the finding says the arrival rate.
    kuprich's threads (many samples each) say nothing."""
    import polars as pl

    with shared_data(IONNINJA).open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 10_000 and len({r["threadName"] for r in rows}) == 10_000
    tr = load_trace(shared_data(IONNINJA))
    step0 = tr.frame.filter(pl.col("step") == 0)
    n = step0.height
    span = float(step0["start_s"].max() - step0["start_s"].min())
    (f,) = [x for x in tr.provenance.findings if x.code == "one_sample_threads"]
    assert f.level == "warning" and f"{n:,} threads sent {n:,} samples in {span:.0f} s" in f.message
    assert f"about {n / span:.3g} req/s arriving" in f.message and 160 < n / span < 175
    assert not [x for x in load_trace(shared_data(KUPRICH)).provenance.findings if x.code == "one_sample_threads"]
