"""GuideLLM's own ``benchmarks.csv``, in both layouts GuideLLM writes.

No real GuideLLM CSV is in the shared collection (only a DERIVED table), so the files are
written here the way GuideLLM's CSV writers lay them out (one header row: ``Type, Run Id,
Id, Name, ...``, ``<Status> <Metric> mean|median|std dev|[min, 0.1, ..., 99, max]``; three
header rows: group / field / statistic) from benchmark values chosen here. The expected
load points are those chosen values, converted by hand (request latency s → ms).
"""

from __future__ import annotations

import csv
import json
import math

import pytest

from bearing_lib import BadValueError, load
from bearing_lib.loaders import detect

PCT = "[min, 0.1, 1, 5, 10, 25, 75, 90, 95, 99, max]"
# (name, duration s, successful, errored, incomplete, rps, ttft ms (mean, median, p90, p95, p99, max),
#  request latency s (mean, median, p90, p95, p99, max))
BENCH = [
    ("synchronous", 60.0, 23, 0, 1, 0.37, (63.3, 63.3, 90.0, 100.0, 119.0, 119.6), (2.6, 2.6, 2.9, 3.0, 3.1, 3.2)),
    ("throughput", 60.0, 1081, 1, 40, 17.98, (8554.9, 11810.4, 20000.0, 21000.0, 22000.0, 23064.2),
     (14.5, 21.5, 25.0, 26.0, 27.0, 28.0)),
    ("constant@2.60", 60.0, 145, 0, 2, 2.42, (77.8, 73.3, 110.0, 130.0, 160.0, 172.6),
     (3.27, 3.45, 3.9, 4.0, 4.2, 4.4)),
    ("constant@4.80", 60.0, 269, 2, 3, 4.48, (85.4, 78.2, 120.0, 140.0, 180.0, 191.9),
     (3.46, 3.65, 4.0, 4.1, 4.3, 4.5)),
]


def _pcts(stats: tuple) -> str:
    mean, median, p90, p95, p99, mx = stats
    return json.dumps([1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 2.0, p90, p95, p99, mx])


def _single(path):
    metrics = [("Requests per second", None), ("Request latency", 6), ("Time to first token ms", 5)]
    header = ["Type", "Run Id", "Id", "Name", "Start Time", "End Time", "Duration"]
    for status in ("Successful", "Errored", "Incomplete"):
        header.append(f"{status} Requests")
        for m, _ in metrics:
            header += [f"{status} {m} {s}" for s in ("mean", "median", "std dev", PCT)]
    header += ["Profile", "Backend", "Generator Data"]
    rows = []
    for name, dur, ok, err, inc, rps, ttft, lat in BENCH:
        row = ["generative_benchmark", "run-1", f"id-{name}", name, "2025-09-01 10:00:00", "2025-09-01 10:01:00", dur]
        for status, n in (("Successful", ok), ("Errored", err), ("Incomplete", inc)):
            row.append(n)
            for _, idx in metrics:
                if status != "Successful":
                    row += [0.0, 0.0, 0.0, json.dumps([0.0] * 11)]
                elif idx is None:
                    row += [rps, rps, 0.1, json.dumps([rps] * 11)]
                else:
                    stats = ttft if idx == 5 else lat
                    row += [stats[0], stats[1], 1.0, _pcts(stats)]
        row += [json.dumps({"type_": "sweep"}), json.dumps({"model": "Qwen3-0.6B"}), "{}"]
        rows.append(row)
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)


def _three_row(path, *, profile: dict, bench=BENCH):
    cols: list[tuple[str, str, str]] = [("Run Info", "Run ID", ""), ("Run Info", "Profile", ""),
                                        ("Run Info", "Backend", ""), ("Benchmark", "Strategy", ""),
                                        ("Timings", "Duration", "Sec")]
    cols += [("Request Counts", k, "") for k in ("Successful", "Incomplete", "Errored", "Total")]
    for group, unit in (("Request Latency", "Sec"), ("Time to First Token", "ms")):
        cols += [(group, f"Successful {unit}", s) for s in ("Mean", "Median", "Std Dev", "Percentiles")]
    cols += [("Server Throughput", "Successful Requests/Sec", s) for s in ("Mean", "Median", "Std Dev", "Percentiles")]
    rows = []
    for name, dur, ok, err, inc, rps, ttft, lat in bench:
        kind = name.split("@")[0]
        row = ["run-1", json.dumps(profile), json.dumps({"model": "m"}), kind, dur, ok, inc, err, ok + inc + err]
        for stats in (lat, ttft):
            row += [stats[0], stats[1], 1.0, _pcts(stats)]
        row += [rps, rps, 0.1, json.dumps([rps] * 11)]
        rows.append(row)
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        for level in range(3):
            w.writerow([c[level] for c in cols])
        w.writerows(rows)


def _check(ds):
    f = ds.frame.sort("run_id", "step")
    # one unit per run: rates ascending, unbounded last; synchronous (concurrency 1) is "<run>/concurrency"
    order = [2, 3, 1, 0]
    assert f["offered_load"].to_list() == [2.6, 4.8, math.inf, 1.0]
    assert f["offered_load_unit"].to_list() == ["rps", "rps", "rps", "concurrency"]
    run = f["run_id"][0]
    assert f["run_id"].to_list() == [run] * 3 + [f"{run}/concurrency"] and f["step"].to_list() == [0, 1, 2, 0]
    for row, i in zip(f.iter_rows(named=True), order, strict=True):
        name, dur, ok, err, inc, rps, ttft, lat = BENCH[i]
        assert row["duration_s"] == dur
        assert (row["n_ok"], row["n_errors"], row["n_requests"]) == (ok, err, ok + err + inc)
        assert row["throughput_rps"] == pytest.approx(rps)
        for stat, k in (("mean", 0), ("p50", 1), ("p90", 2), ("p95", 3), ("p99", 4), ("max", 5)):
            assert row[f"ttft_ms_{stat}"] == pytest.approx(ttft[k]), stat
            assert row[f"latency_ms_{stat}"] == pytest.approx(lat[k] * 1000.0), stat


def test_single_header_layout(tmp_path):
    p = tmp_path / "benchmarks.csv"
    _single(p)
    assert detect(p).name == "guidellm-csv"
    ds = load(p)
    assert ds.kind == "loadpoints"
    _check(ds)
    assert ds.frame["model"].unique().to_list() == ["Qwen3-0.6B"]


def test_three_row_layout_takes_rates_from_the_profile(tmp_path):
    p = tmp_path / "benchmarks.csv"
    _three_row(p, profile={"type_": "sweep", "measured_rates": [2.6, 4.8]})
    assert detect(p).name == "guidellm-csv"
    ds = load(p)
    _check(ds)
    assert "offered_load_from_profile" in {x.code for x in ds.provenance.findings}


def test_three_row_layout_without_rates_says_so(tmp_path):
    p = tmp_path / "benchmarks.csv"
    _three_row(p, profile={"type_": "sweep"})
    ds = load(p)
    f = ds.frame
    assert f.filter(f["offered_load"].is_null()).height == 2
    found = {x.code: x for x in ds.provenance.findings}
    assert found["offered_load_unknown"].count == 2


def test_a_row_wider_than_the_header_is_refused_naming_the_row(tmp_path):
    p = tmp_path / "benchmarks.csv"
    _single(p)
    lines = p.read_text().splitlines()
    lines[3] += ",7,8,9"
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(BadValueError, match="row 4") as exc:
        load(p)
    assert "benchmarks.json" in str(exc.value)
