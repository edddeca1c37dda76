"""``bearing profile``: the CLI over the traffic profile, on the bundled Azure code trace.

Expected per-minute values come from an independent stdlib parse of the CSV (see
``tests/plan/test_profile.py``).
"""

from __future__ import annotations

import json
import math
from collections import Counter

import numpy as np
import pytest
from typer.testing import CliRunner

from bearing_lib.cli.main import app
from tests.traffic.test_profile import AZURE, _azure_rows, _full_bins

runner = CliRunner()


@pytest.fixture
def code_csv(bundled):
    return bundled(AZURE["code"])


def test_profile_writes_json_and_prints_summary(code_csv, tmp_path):
    out = tmp_path / "p.json"
    res = runner.invoke(app, ["profile", str(code_csv), "--json", str(out), "--quantile", "0.95", "--growth", "2"])
    assert res.exit_code == 0, res.output
    assert "56 minutes (13 empty)" in res.output and "max 585 requests/min" in res.output
    assert "peak/mean 3.85" in res.output and f"wrote {out}" in res.output
    d = json.loads(out.read_text())
    times = [r[0] for r in _azure_rows(code_csv)]
    keys, c = _full_bins(times, 60.0, 0.0)
    counts = np.array([c.get(k, 0) for k in keys], dtype=float)
    assert d["targets"]["target"]["rps"] == pytest.approx(2 * float(np.quantile(counts, 0.95)) / 60, rel=1e-12)
    assert d["targets"]["target"]["quantile"] == 0.95 and d["targets"]["target"]["growth"] == 2.0
    # near term = the current peak (the P95 asked for, before growth; not the busiest minute 585) x 1.5
    assert d["targets"]["near_term"]["rps"] == pytest.approx(float(np.quantile(counts, 0.95)) / 60 * 1.5, rel=1e-12)
    assert d["quantile_method"] == "linear" and d["slo_budget"]["available"] is False
    # strict JSON: no NaN / Infinity tokens
    assert "NaN" not in out.read_text() and "Infinity" not in out.read_text()


def test_profile_refuses_to_overwrite_without_force(code_csv, tmp_path):
    out = tmp_path / "p.json"
    out.write_text("{}")
    res = runner.invoke(app, ["profile", str(code_csv), "--json", str(out)])
    assert res.exit_code == 1 and "exists; pass --force" in res.output
    assert out.read_text() == "{}"
    res = runner.invoke(app, ["profile", str(code_csv), "--json", str(out), "--force"])
    assert res.exit_code == 0 and json.loads(out.read_text())["per_minute"]["max"] == 585


@pytest.mark.parametrize("layout", ["limits", "list", "wrapped"])
def test_profile_mixes_from_limits_json_or_mixes_file(code_csv, tmp_path, layout):
    spec = [
        {"name": "short", "bounds": {"input_tokens": [None, 1024]}},
        {"name": "long", "bounds": {"input_tokens": [1024, None]}},
    ]
    doc = {"limits": {"bearing_version": "0.1.0", "mix_spec": spec, "mixes": []}, "list": spec,
           "wrapped": {"mixes": spec}}[layout]
    mixes = tmp_path / "m.json"
    mixes.write_text(json.dumps(doc))
    out = tmp_path / "p.json"
    res = runner.invoke(app, ["profile", str(code_csv), "--mixes", str(mixes), "--json", str(out)])
    assert res.exit_code == 0, res.output
    rows = _azure_rows(code_csv)
    short = sum(1 for r in rows if r[1] < 1024)
    shares = {m["mix"]: m for m in json.loads(out.read_text())["mix_shares"]}
    assert set(shares) == {"short", "long"}
    assert shares["short"]["n_requests"] == short
    assert shares["long"]["n_requests"] == len(rows) - short
    assert math.isclose(shares["short"]["share"], short / len(rows))
    hours = Counter(math.floor(r[0] / 3600) for r in rows)
    per_hour = json.loads(out.read_text())["mix_shares_per_hour"]["rows"]
    assert sum(r["n_requests"] for r in per_hour) == sum(hours.values())


def test_profile_bad_inputs_exit_1(code_csv, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"something": 1}')
    res = runner.invoke(app, ["profile", str(code_csv), "--mixes", str(bad), "--json", str(tmp_path / "o.json")])
    assert res.exit_code == 1 and "mix_spec" in res.output
    res = runner.invoke(app, ["profile", str(code_csv), "--growth", "-1", "--json", str(tmp_path / "o.json")])
    assert res.exit_code == 1 and "growth must be a positive number" in res.output
    res = runner.invoke(app, ["profile", str(tmp_path / "missing.csv"), "--json", str(tmp_path / "o.json")])
    assert res.exit_code == 1 and "no such file" in res.output
    assert not (tmp_path / "o.json").exists()


def test_profile_of_a_parquet_folder_and_engine_flags(code_csv, tmp_path):
    """A hive-partitioned Parquet folder is profiled lazily; its per-minute counts are the CSV's."""
    import polars as pl

    from bearing_lib.loaders import load

    trace = load(code_csv)
    ds = tmp_path / "ds"
    trace.frame.with_columns((pl.col("start_s") // 3600).cast(pl.Int64).alias("hour")).write_parquet(
        ds, partition_by=["hour"])
    ref, out = tmp_path / "ref.json", tmp_path / "ds.json"
    assert runner.invoke(app, ["profile", str(code_csv), "--json", str(ref)]).exit_code == 0
    res = runner.invoke(app, ["profile", str(ds), "--json", str(out)])
    assert res.exit_code == 0, res.output
    a, b = json.loads(ref.read_text()), json.loads(out.read_text())
    assert b["per_minute"]["series"] == a["per_minute"]["series"]
    assert b["per_minute"]["p99"] == a["per_minute"]["p99"]
    assert b["source"]["format"] == "parquet-dataset" and b["source"]["engine"]["engine"] == "embedded"
    assert b["source"]["n_rows"] == trace.frame.height
    res = runner.invoke(app, ["profile", str(ds), "--scheduler", "tcp://127.0.0.1:1", "--json", str(out), "--force"])
    assert res.exit_code == 1 and "--engine dask" in res.output
    res = runner.invoke(app, ["profile", str(ds), "--engine", "spark", "--json", str(out), "--force"])
    assert res.exit_code == 1 and "embedded or dask" in res.output
    res = runner.invoke(app, ["profile", str(tmp_path / "none"), "--engine", "embedded", "--json", str(out), "--force"])
    assert res.exit_code == 1 and "no Parquet file" in res.output
