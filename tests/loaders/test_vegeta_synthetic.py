"""Vegeta text reports, jaggr rows and gob results without the shared data: SYNTHETIC files.

The FerdinandZhong files have no licence. The reports here are written in ``vegeta report``'s
text layout (both latency sets: before 12.8 ``[mean, 50, 95, 99, max]``, from 12.8 ``[min,
mean, 50, 90, 95, 99, max]``) from numbers chosen here; the jaggr rows are per-second
aggregates in the shape a ``vegeta encode | jaggr`` pipeline prints; the gob file carries the
type header a Go gob stream of ``vegeta.Result`` starts with. Expected values follow by hand.
"""

from __future__ import annotations

import json

import pytest

from bearing_lib import InputError, load
from bearing_lib.loaders import detect

OLD = """Requests      [total, rate, throughput]  60, 1.02, 0.25
Duration      [total, attack, wait]      59.602061855s, 58.999336599s, 602.725256ms
Latencies     [mean, 50, 95, 99, max]    137.662038ms, 29.240405ms, 602.552633ms, 612.705207ms, 613.812499ms
Bytes In      [total, mean]              175503, 2925.05
Bytes Out     [total, mean]              14055, 234.25
Success       [ratio]                    25.00%
Status Codes  [code:count]               200:15  500:45
Error Set:
500 Internal Server Error
"""
NEW = """Requests      [total, rate, throughput]  240, 4.00, 3.50
Duration      [total, attack, wait]      1m0.5s, 59.75s, 750ms
Latencies     [min, mean, 50, 90, 95, 99, max]  20ms, 900ms, 850ms, 1.2s, 1.5s, 2.5s, 30s
Bytes In      [total, mean]              1000, 4.17
Bytes Out     [total, mean]              500, 2.08
Success       [ratio]                    87.50%
Status Codes  [code:count]               0:10  200:210  429:20
Error Set:
Post "http://h/x": context deadline exceeded (Client.Timeout exceeded while awaiting headers)
429 Too Many Requests
"""


def test_a_folder_of_reports_is_one_run_with_a_step_per_rate(tmp_path):
    folder = tmp_path / "bloomz"
    folder.mkdir()
    (folder / "tgi_1qps_60duration_results.txt").write_text(OLD)
    (folder / "tgi_4qps_60duration_results.txt").write_text(NEW)
    assert detect(folder).name == "vegeta-text-report"
    f = load(folder).frame.sort("step")
    assert f["offered_load"].to_list() == [1.0, 4.0]
    assert f["n_requests"].to_list() == [60, 240]
    assert f["n_ok"].to_list() == [15, 210] and f["n_errors"].to_list() == [45, 30]
    assert f["duration_s"].to_list() == pytest.approx([59.602061855, 60.5])
    assert f["throughput_rps"].to_list() == [0.25, 3.50]
    assert f["achieved_rate_rps"].to_list() == [1.02, 4.00]
    assert f["latency_ms_p99"].to_list() == pytest.approx([612.705207, 2500.0])
    assert f["latency_ms_p90"].to_list()[1] == pytest.approx(1200.0) and f["latency_ms_p90"][0] is None
    assert f["latency_ms_max"].to_list() == pytest.approx([613.812499, 30000.0])


def test_jaggr_rows_pool_into_one_load_point(tmp_path):
    rows = [(39, {"200": 39, "500": 0}), (40, {"200": 38, "500": 2}), (41, {"200": 40, "500": 0})]
    p = tmp_path / "vegeta_results.json"
    p.write_text("".join(json.dumps({"bytes_in": {"sum": 10}, "bytes_out": {"sum": 0}, "code": {"hist": h},
                                     "latency": {"p25": 400000 + i, "p50": 500000, "p99": 1_600_000}, "rps": rps})
                         + "\n" for i, (rps, h) in enumerate(rows)))
    assert detect(p).name == "vegeta-jaggr"
    row = load(p).frame.row(0, named=True)
    assert (row["n_requests"], row["n_ok"], row["n_errors"]) == (120, 117, 3)
    assert row["duration_s"] == 3.0 and row["throughput_rps"] == pytest.approx(117 / 3)


def test_gob_results_are_recognised_and_refused_with_the_conversion(tmp_path):
    p = tmp_path / "tgi_2qps_60duration_results.bin"
    header = b"".join(len(w).to_bytes(1, "big") + w for w in (b"Result", b"Attack", b"Seq", b"Code", b"Timestamp",
                                                                b"Latency", b"BytesOut", b"BytesIn", b"Error"))
    p.write_bytes(b"\x4f\xff\x81\x03\x01\x01" + header + b"\x00" * 32)
    assert detect(p).name == "vegeta-gob"
    with pytest.raises(InputError, match="vegeta encode --to json tgi_2qps_60duration_results.bin"):
        load(p)
