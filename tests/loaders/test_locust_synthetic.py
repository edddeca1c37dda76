"""Locust CSVs without the shared data: a SIMULATED run written as ``locust --csv`` would.

The real Locust files (rishabhpoddar, frankmwito, veroliut) have no licence. Here a run is
simulated second by second (users 0 → 5 → 10 → 0; each second a seeded number of requests,
failures and response times), and written in Locust's layouts: ``_stats_history.csv``
rows hold the cumulative ``Total ...`` columns of an ``Aggregated`` row and of the one
endpoint, ``_stats.csv`` the whole-run rows (plus a ``TTFT`` custom metric row), and
``_failures.csv``. Expected values are sums over the simulated seconds.
"""

from __future__ import annotations

import csv
import random

import pytest

from bearing_lib import load
from bearing_lib.loaders import detect

HIST_COLS = ["Timestamp", "User Count", "Type", "Name", "Requests/s", "Failures/s", "50%", "66%", "75%", "80%",
             "90%", "95%", "98%", "99%", "99.9%", "99.99%", "100%", "Total Request Count", "Total Failure Count",
             "Total Median Response Time", "Total Average Response Time", "Total Min Response Time",
             "Total Max Response Time", "Total Average Content Size"]
STATS_COLS = ["Type", "Name", "Request Count", "Failure Count", "Median Response Time", "Average Response Time",
              "Min Response Time", "Max Response Time", "Average Content Size", "Requests/s", "Failures/s", "50%",
              "66%", "75%", "80%", "90%", "95%", "98%", "99%", "99.9%", "99.99%", "100%"]
T0 = 1_782_550_000
USERS = [0] * 3 + [5] * 20 + [10] * 20 + [0] * 3


def _simulate(seed: int = 7):
    rng = random.Random(seed)
    seconds = []
    for u in USERS:
        n = rng.randint(2 * u, 3 * u) if u else 0
        times = [rng.uniform(100, 300) * (1 + u / 10) for _ in range(n)]
        f = sum(1 for _ in range(n) if rng.random() < 0.05)
        seconds.append((u, n, f, times))
    return seconds


def _write_run(folder, seconds):
    folder.mkdir(parents=True, exist_ok=True)
    tot_n = tot_f = 0
    tot_sum = tot_max = 0.0
    with open(folder / "run_stats_history.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(HIST_COLS)
        for k, (u, n, f, times) in enumerate(seconds):
            tot_n, tot_f = tot_n + n, tot_f + f
            tot_sum += sum(times)
            tot_max = max([tot_max, *times])
            avg = tot_sum / tot_n if tot_n else 0.0
            for typ, name in (("POST", "/v1/completions"), ("", "Aggregated")):
                w.writerow([T0 + k, u, typ, name, n, f, *["N/A"] * 11, tot_n, tot_f, 0, avg, 0, tot_max, 10])
    all_times = [t for *_, times in seconds for t in times]
    n_all, f_all = sum(s[1] for s in seconds), sum(s[2] for s in seconds)
    duration = len(seconds)
    with open(folder / "run_stats.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(STATS_COLS)
        mean = sum(all_times) / len(all_times)
        row = [n_all, f_all, 200, mean, min(all_times), max(all_times), 10, n_all / duration, f_all / duration,
               200, 220, 240, 250, 300, 320, 350, 380, 400, 410, int(max(all_times))]
        w.writerow(["POST", "/v1/completions", *row])
        w.writerow(["STREAM", "TTFT", n_all, 0, 40, 45.5, 10, 300, 0, n_all / duration, 0, 40, 44, 48, 50, 60,
                    70, 90, 120, 200, 210, 300])
        w.writerow(["", "Aggregated", 2 * n_all, f_all, 150, mean, 10, max(all_times), 10, 2 * n_all / duration,
                    f_all / duration, 150, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1])
    with open(folder / "run_failures.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["Method", "Name", "Error", "Occurrences"])
        w.writerow(["POST", "/v1/completions", "HTTPError('503 Server Error: Service Unavailable')", f_all])
    return n_all, f_all, all_times, duration


def test_history_plateaus_are_steps_with_exact_counts(tmp_path):
    seconds = _simulate()
    _write_run(tmp_path / "run", seconds)
    p = tmp_path / "run" / "run_stats_history.csv"
    assert detect(p).name == "locust-stats-history"
    f = load(p).frame.sort("step")
    assert f["offered_load"].to_list() == [5.0, 10.0]
    for row, users in zip(f.iter_rows(named=True), (5, 10), strict=True):
        held = [s for s in seconds if s[0] == users]
        n, fails = sum(s[1] for s in held), sum(s[2] for s in held)
        times = [t for *_, ts in held for t in ts]
        assert (row["n_requests"], row["n_errors"], row["n_ok"]) == (n, fails, n - fails)
        assert row["duration_s"] == pytest.approx(len(held))
        assert row["throughput_rps"] == pytest.approx((n - fails) / len(held))
        assert row["latency_ms_mean"] == pytest.approx(sum(times) / len(times))


def test_stats_whole_run_keeps_custom_metric_rows_out_of_the_counts(tmp_path):
    seconds = _simulate()
    n_all, f_all, times, duration = _write_run(tmp_path / "run", seconds)
    p = tmp_path / "run" / "run_stats.csv"
    assert detect(p).name == "locust-stats"
    row = load(p).frame.row(0, named=True)
    assert (row["n_requests"], row["n_errors"]) == (n_all, f_all)  # the TTFT row is not a request
    assert row["ttft_ms_mean"] == 45.5 and row["ttft_ms_p99"] == 120.0
    assert row["latency_ms_mean"] == pytest.approx(sum(times) / len(times))
    assert row["offered_load"] is None


def test_the_folder_reads_as_a_set(tmp_path):
    seconds = _simulate()
    n_all, f_all, *_ = _write_run(tmp_path / "run", seconds)
    (tmp_path / "run" / "README.md").write_text("notes\n")
    assert detect(tmp_path / "run").name == "locust-csv-set"
    ds = load(tmp_path / "run")
    f = ds.frame.sort("step")
    assert f["offered_load"].to_list() == [5.0, 10.0]
    want = [sum(s[2] for s in seconds if s[0] == u) for u in (5, 10)]
    assert f["n_errors"].to_list() == want and sum(want) <= f_all
    assert any("503" in x.message for x in ds.provenance.findings)
