"""Locust CSV loaders, on real runs read in place (the source repositories have no licence).

Expected values are computed inside each test with the csv module from the raw files:
plateaus are found with a plain loop over the Aggregated rows, counts from the cumulative
``Total ...`` columns.
"""

from __future__ import annotations

import csv
import re

import pytest

from bearing_lib import InsufficientDataError, UnsupportedVersionError, load
from bearing_lib.common.errors import FormatDetectionError
from bearing_lib.loaders import detect

pytestmark = pytest.mark.shared_data
RISH = "loadtests/locust/rishabhpoddar-llm-inference-modal-vllm"
FRANK = "loadtests/locust/frankmwito-perf-testing-demo"
VERO = "loadtests/locust/veroliut-retail-demo-store"


def _rows(p):
    with open(p, newline="") as fh:
        return list(csv.DictReader(fh))


def test_stats_llm_metric_rows_are_not_requests(shared_data):
    p = shared_data(f"{RISH}/locust_stats.csv")
    rows = {r["Name"]: r for r in _rows(p)}
    lp = load(p)
    assert lp.provenance.format == "locust-stats"
    row = lp.frame.row(0, named=True)
    # only the HTTP endpoint counts: 190, not the Aggregated 608 that includes TTFT and E2E events
    assert row["n_requests"] == int(rows["chat (headers)"]["Request Count"]) == 190
    assert int(rows["Aggregated"]["Request Count"]) == 608
    dur = int(rows["Aggregated"]["Request Count"]) / float(rows["Aggregated"]["Requests/s"])
    assert row["duration_s"] == pytest.approx(dur)
    assert row["throughput_rps"] == pytest.approx(190 / dur)
    assert row["throughput_rps"] == pytest.approx(float(rows["chat (headers)"]["Requests/s"]))
    assert row["ttft_ms_p99"] == float(rows["TTFT"]["99%"]) == 94000
    assert row["ttft_ms_mean"] == pytest.approx(float(rows["TTFT"]["Average Response Time"]))
    assert row["latency_ms_p50"] == float(rows["E2E"]["50%"])
    assert row["latency_ms_max"] == pytest.approx(float(rows["E2E"]["Max Response Time"]))
    assert row["offered_load"] is None
    codes = {x.code for x in lp.provenance.findings}
    assert {"metric_rows", "percentiles_rounded", "no_user_count", "failures"} <= codes


def _plateau(history, level):
    agg = [r for r in history if r["Name"] == "Aggregated" and r["Type"] == ""]
    ts = [int(r["Timestamp"]) for r in agg if int(r["User Count"]) == level]
    return min(ts), max(ts)


def _cum(history, typ, name, t):
    best = None
    for r in history:
        if r["Type"] == typ and r["Name"] == name and int(r["Timestamp"]) <= t:
            best = r
    return best


def test_requests_cut_off_at_the_stop_are_said(shared_data):
    # the locustfile fires TTFT on a stream's first chunk and E2E at its end: 228 first tokens, 190 ends, so 38
    # requests were cut off when the run stopped its users (Locust counts them neither ok nor failed); said, in the
    # stats file's reading and in the folder's
    rows = {r["Name"]: r for r in _rows(shared_data(f"{RISH}/locust_stats.csv"))}
    assert (int(rows["TTFT"]["Request Count"]), int(rows["E2E"]["Request Count"])) == (228, 190)
    for lp in (load(shared_data(f"{RISH}/locust_stats.csv")), load(shared_data(RISH))):
        (f,) = [f for f in lp.provenance.findings if f.code == "requests_cut_off"]
        assert f.message.startswith("locust_stats.csv: 38 requests streamed a first token (TTFT: 228) but never "
                                    "ended (E2E: 190)")


def test_history_plateau_counts_and_exact_mean(shared_data):
    p = shared_data(f"{RISH}/locust_stats_history.csv")
    hist = _rows(p)
    lo, hi = _plateau(hist, 40)
    lp = load(p)
    assert lp.provenance.format == "locust-stats-history"
    (row,) = lp.frame.to_dicts()  # the ramp 1..39 users (2-4 s per level) has no 10 s plateau
    assert row["offered_load"] == 40 and row["offered_load_unit"] == "concurrency"
    assert row["duration_s"] == hi - lo + 1
    a, b = _cum(hist, "POST", "chat (headers)", hi), _cum(hist, "POST", "chat (headers)", lo - 1)
    n = int(a["Total Request Count"]) - int(b["Total Request Count"])
    assert row["n_requests"] == n
    assert row["throughput_rps"] == pytest.approx(n / (hi - lo + 1))
    ta, tb = _cum(hist, "STREAM", "TTFT", hi), _cum(hist, "STREAM", "TTFT", lo - 1)
    s = float(ta["Total Average Response Time"]) * int(ta["Total Request Count"]) - float(
        tb["Total Average Response Time"]
    ) * int(tb["Total Request Count"])
    assert row["ttft_ms_mean"] == pytest.approx(s / (int(ta["Total Request Count"]) - int(tb["Total Request Count"])))
    assert row["ttft_ms_p99"] is None  # rolling-window percentiles are not per-plateau percentiles
    stats_total = int(next(r for r in _rows(shared_data(f"{RISH}/locust_stats.csv")) if r["Name"] == "chat (headers)")[
        "Request Count"
    ])
    assert row["n_requests"] <= stats_total


def test_history_ramp_without_plateau_is_reported(shared_data):
    p = shared_data(f"{FRANK}/results_stats_history.csv")
    with pytest.raises(InsufficientDataError, match="no user count was held for 10 s"):
        load(p)
    lp = load(p, min_plateau_s=5)  # 11200 users held for 6 s
    assert lp.frame["offered_load"].to_list() == [11200]


def test_folder_set_two_prefixes_and_failure_layouts(shared_data):
    folder = shared_data(FRANK)
    lp = load(folder)
    assert lp.provenance.format == "locust-csv-set"
    runs = dict(zip(lp.frame["run_id"], lp.frame["offered_load"], strict=True))
    assert runs == {"frankmwito-perf-testing-demo/reports": 30000, "frankmwito-perf-testing-demo/results": None}
    # failures CSV (older layout): status codes only inside the error text
    fails = _rows(folder / "results_failures.csv")
    n429 = sum(int(r["Occurrences"]) for r in fails if re.search(r"\b429\b", r["Error"]))
    total = sum(int(r["Occurrences"]) for r in fails)
    msg = " ".join(x.message for x in lp.provenance.findings if x.code == "failures")
    assert f"{total} failed requests" in msg and f"rejected (429): {n429}" in msg
    agg = next(r for r in _rows(folder / "results_stats.csv") if r["Name"] == "Aggregated")
    assert total == int(agg["Failure Count"])  # so no failures_mismatch finding
    assert not any(x.code == "failures_mismatch" for x in lp.provenance.findings)


def test_newer_failures_layout_and_non_locust_csv(shared_data):
    folder = shared_data(RISH)
    p = folder / "locust_failures.csv"
    assert _rows(p) == [] and "First Seen" in p.read_text()
    lp = load(p)  # read with its set
    assert lp.provenance.format == "locust-csv-set"
    assert any("newer (First Seen, Last Seen)" in x.message for x in lp.provenance.findings)
    assert any("NOT_LOCUST_modal_autoscaler_stats.csv" in x.message for x in load(folder).provenance.findings)
    with pytest.raises(FormatDetectionError):
        detect(folder / "NOT_LOCUST_modal_autoscaler_stats.csv")


def test_exceptions_csv_multiline_tracebacks(shared_data):
    p = shared_data(f"{VERO}/results_exceptions.csv")
    total = sum(int(r["Count"]) for r in _rows(p))
    lp = load(p)
    (f,) = [x for x in lp.provenance.findings if x.code == "client_exceptions"]
    assert f.count == total == 14715


def test_pre_1_0_stats_layout_is_refused(tmp_path):
    p = tmp_path / "old_stats.csv"
    p.write_text('"Method","Name","# requests","# failures","Median response time"\n"GET","/",10,0,20\n')
    with pytest.raises(UnsupportedVersionError) as exc:
        load(p)
    assert exc.value.tool == "Locust" and exc.value.version == "< 1.0"
    assert "Request Count" in exc.value.missing


def test_unknown_history_layout(tmp_path):
    p = tmp_path / "x_stats_history.csv"
    p.write_text("Timestamp,User Count,Type,Name,Requests/s\n1,1,,Aggregated,0\n")
    with pytest.raises(UnsupportedVersionError) as exc:
        load(p)
    assert "Total Request Count" in exc.value.missing


def test_newer_failures_layout_with_rows(tmp_path, shared_data):
    import shutil

    src = shared_data(RISH)
    for name in ("locust_stats.csv", "locust_stats_history.csv"):
        shutil.copyfile(src / name, tmp_path / name)
    (tmp_path / "locust_failures.csv").write_text(
        "Method,Name,Error,Occurrences,First Seen,Last Seen\n"
        "POST,chat (headers),\"HTTPError('429 Client Error: Too Many Requests for url: /v1/chat')\",7,"
        "1782550400.1,1782550500.2\n"
        "POST,chat (headers),\"ReadTimeout(\"\"HTTPSConnectionPool(host='x', port=443): Read timed out.\"\")\",2,"
        "1782550401.0,1782550402.0\n"
        "STREAM,TTFT,CustomError('no first token'),4,1782550401.0,1782550402.0\n"
    )
    lp = load(tmp_path / "locust_failures.csv")
    (f,) = [x for x in lp.provenance.findings if x.code == "failures"]
    # the TTFT metric row's failures are not request failures
    assert f.count == 9 and "rejected (429): 7" in f.message and "timeout: 2" in f.message
    assert "newer (First Seen, Last Seen)" in f.message
    (mm,) = [x for x in lp.provenance.findings if x.code == "failures_mismatch"]
    assert "counts 9 failed requests, the stats CSV 0" in mm.message


def test_a_history_gap_before_a_plateau_does_not_count_the_ramp(shared_data):
    """frankmwito's reports run (a new user's case, round 21): the history has no row for the second before the
    30,000-user plateau (the row before is 3 s earlier, at 29,800 users); counting from it added 226 ramp requests
    (39,412). By hand with the csv module: the plateau's Aggregated rows, counted from its first row to its last,
    over the seconds between them."""
    p = shared_data(f"{FRANK}/reports_stats_history.csv")
    hist = [r for r in _rows(p) if r["Name"] == "Aggregated" and not r["Type"]]
    at = [r for r in hist if float(r["User Count"]) == 30000]
    first, last = at[0], at[-1]
    t0 = float(first["Timestamp"])
    assert not any(float(r["Timestamp"]) == t0 - 1 for r in hist)  # the gap
    n = int(last["Total Request Count"]) - int(first["Total Request Count"])
    f = int(last["Total Failure Count"]) - int(first["Total Failure Count"])
    assert (n, f) == (39186, 39170)
    lp = load(p)
    (row,) = lp.frame.to_dicts()
    assert (row["n_requests"], row["n_errors"]) == (n, f)
    assert row["duration_s"] == float(last["Timestamp"]) - t0
    (pl_,) = [x for x in lp.provenance.findings if x.code == "plateaus"]
    assert "no row for the second before the plateau(s) at 30000 users" in pl_.message
