"""The one set of load-test helpers every load-test loader uses (bearing_lib/loaders/_loadtest.py):
finish_loadpoints, step rows and step columns, JSON lines. Inputs are written by hand in the test."""

from __future__ import annotations

import hashlib

import polars as pl
import pytest

from bearing_lib.common.errors import BadValueError, InputError
from bearing_lib.data.trace import STEP_SCHEMA
from bearing_lib.loaders._common import new_provenance
from bearing_lib.loaders._http_loadtest import Plateau, plateau_steps
from bearing_lib.loaders._loadtest import (
    StepFacts,
    finish_loadpoints,
    iter_json_lines,
    json_lines,
    step_exprs,
    step_row,
    step_rows,
)
from bearing_lib.loaders.source import InputSource


@pytest.fixture
def src(tmp_path):
    p = tmp_path / "summary.json"
    p.write_bytes(b'{"made": "by hand"}\n')
    return InputSource(p)


def test_finish_loadpoints_provenance_and_field_origins(src):
    rows = [{"run_id": "r", "step": 0, "offered_load": 2.0, "offered_load_unit": "rps", "n_requests": 100,
             "n_ok": 98, "throughput_rps": 1.9, "latency_ms_p99": 850.0, "source_file": "summary.json"}]
    lp = finish_loadpoints(rows, src, format="fmt", tool="tool", tool_version="1.2", derived=("throughput_rps",),
                           options={"k": 1}, files=[src.path])
    prov = lp.provenance
    assert prov.sha256 == hashlib.sha256(src.path.read_bytes()).hexdigest()
    assert (prov.source, prov.format, prov.tool, prov.tool_version) == (str(src.path), "fmt", "tool", "1.2")
    assert prov.time_origin == "none" and prov.timezone == "not applicable (aggregates)"
    assert prov.options == {"k": 1} and prov.files == [str(src.path)]
    assert prov.fields["n_ok"] == "measured" and prov.fields["throughput_rps"] == "derived"
    assert prov.fields["ttft_ms_p99"] == "absent" and "source_file" not in prov.fields
    assert lp.frame["latency_ms_p99"].to_list() == [850.0]


def test_finish_loadpoints_refuses_no_rows_and_negative_values(src):
    with pytest.raises(BadValueError, match="holds no load point") as exc:
        finish_loadpoints([], src, format="f", tool="t")
    assert isinstance(exc.value, InputError)
    rows = [{"run_id": "r", "step": 3, "offered_load": 4.0, "ttft_ms_p50": -1.5, "source_file": "a/b.json"}]
    with pytest.raises(BadValueError) as exc:
        finish_loadpoints(rows, src, format="f", tool="t")
    assert exc.value.field == "ttft_ms_p50" and "found -1.5 (run r, step 3)" in str(exc.value)
    assert "a/b.json" in str(exc.value)


def test_new_provenance_leaves_the_hash_to_finish(src):
    prov = new_provenance(src, format="f", tool="t")
    assert (prov.source, prov.format, prov.tool, prov.sha256) == (str(src.path), "f", "t", "")


def test_step_rows_and_columns_agree_with_the_schemas():
    row = step_row("r", 2, 1.5, "rps", duration_s=60.0, n_requests_reported=90, source_file="x.csv")
    assert list(row) == list(STEP_SCHEMA)
    assert row == {"run_id": "r", "step": 2, "offered_load": 1.5, "offered_load_unit": "rps", "duration_s": 60.0,
                   "n_requests_reported": 90, "source_file": "x.csv", "send_window_s": None,
                   "send_window_basis": None, "send_window_method": None, "duration_includes_drain": None}
    facts = StepFacts("r", 1.5, "rps", duration_s=60.0, n_requests_reported=90, source_file="x.csv", step=2)
    assert step_rows([facts]) == [row]
    assert plateau_steps([Plateau(0, 8.0, 10.0, 70.0)], run_id="r", unit="concurrency", source_file="f") == [
        step_row("r", 0, 8.0, "concurrency", duration_s=60.0, source_file="f")]
    frame = pl.DataFrame({"x": [1, 2]}).select(pl.col("x"), *step_exprs("r", 4, None, None))
    assert frame.schema["step"] == pl.Int64 and frame.schema["offered_load"] == pl.Float64
    assert frame.row(1) == (2, "r", 4, None, None)


def test_json_lines_skip_blanks_and_name_the_bad_line(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_text('{"a": 1}\n\n{"a": Infinity}\n')
    got = json_lines(InputSource(p))
    assert got[0] == (1, {"a": 1}) and got[1][0] == 3 and got[1][1]["a"] == float("inf")
    p.write_text('{"a": 1}\n{"a": \n')
    it = iter_json_lines(InputSource(p))
    assert next(it) == (1, {"a": 1})
    with pytest.raises(BadValueError, match="line is not JSON") as exc:
        next(it)
    assert exc.value.row == 2
