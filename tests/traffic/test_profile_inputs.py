"""``bearing profile``'s input paths: one lazy path for every Parquet input, the Parquet cache for large
CSV / JSON traces, and the quiet rule of the progress bar.

The truth is the in-memory profile (``profile_traffic`` on the loaded trace): counts equal, float
figures within 1e-9 relative (sums of floats in another order). No timing is asserted here; speed is
measured by ``bench/bench_profile.py``.
"""

from __future__ import annotations

import io
import json
import math

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from bearing_lib.cli.main import app
from bearing_lib.common.progress import progress_wanted
from bearing_lib.data.trace import RequestTrace, conform
from bearing_lib.loaders import load
from bearing_lib.loaders.canonical import write_trace
from bearing_lib.traffic.dataset import profile_dataset
from bearing_lib.traffic.onepass import gap_summary
from bearing_lib.traffic.profile import profile_traffic
from tests.factories import leaves, provenance

runner = CliRunner()
T0 = 1_767_225_600.0


def _frame(n: int = 60_000, seed: int = 3, sort: bool = True) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    t = T0 + 13.5 + rng.uniform(0, 3 * 3600.0, n)
    if sort:
        t = np.sort(t)
    return pl.DataFrame({
        "start_s": np.round(t, 3), "input_tokens": rng.integers(1, 3000, n), "output_tokens": rng.integers(1, 500, n),
        "status": np.where(rng.uniform(size=n) < 0.01, "error", np.where(
            rng.uniform(size=n) < 0.001, None, np.where(rng.uniform(size=n) < 0.005, "cancelled", "ok"))),
    })


def _trace(frame: pl.DataFrame) -> RequestTrace:
    return RequestTrace(conform(frame), provenance("synthetic", format="synthetic", time_origin="epoch"))


def _same_numbers(a: dict, b: dict) -> None:
    la, lb = dict(leaves(a)), dict(leaves(b))
    assert {k for k in la if not k.startswith(".source")} == {k for k in lb if not k.startswith(".source")}
    for k, v in la.items():
        if k.startswith(".source") or k.startswith(".bearing_version"):
            continue
        w = lb[k]
        if isinstance(v, float) and isinstance(w, float):
            assert math.isclose(v, w, rel_tol=1e-9, abs_tol=1e-12), (k, v, w)
        else:
            assert v == w, (k, v, w)


@pytest.mark.parametrize("sort", [True, False])
def test_one_parquet_file_streams_and_equals_in_memory(tmp_path, sort):
    tr = _trace(_frame(sort=sort))
    f = write_trace(tr, tmp_path / "t.parquet")
    out = tmp_path / "p.json"
    res = runner.invoke(app, ["profile", str(f), "--json", str(out)])
    assert res.exit_code == 0, res.output
    d = json.loads(out.read_text())
    assert d["source"]["format"] == "parquet-dataset" and d["source"]["engine"]["engine"] == "embedded"
    _same_numbers(profile_traffic(load(f)).to_dict(), d)
    # the same plan with --engine embedded: the same document
    out2 = tmp_path / "p2.json"
    assert runner.invoke(app, ["profile", str(f), "--engine", "embedded", "--json", str(out2)]).exit_code == 0
    assert json.loads(out2.read_text()) == d


def test_folder_and_glob_take_the_same_lazy_path(tmp_path):
    """A folder of Parquet files and a glob over them: the numbers of the in-memory profile of all their
    requests, and the same document with or without --engine embedded (one plan for every Parquet input)."""
    fr = _frame(sort=False)
    whole = write_trace(_trace(fr), tmp_path / "whole.parquet")
    (tmp_path / "parts").mkdir()
    for i in range(3):  # every third request: each file spans the whole trace, out of order across files
        write_trace(_trace(fr.gather_every(3, offset=i)), tmp_path / "parts" / f"p{i}.parquet")
    truth = profile_traffic(load(whole)).to_dict()
    for arg in (str(tmp_path / "parts"), str(tmp_path / "parts" / "p*.parquet")):
        docs = []
        for extra in ([], ["--engine", "embedded"]):
            out = tmp_path / f"p{len(docs)}.json"
            res = runner.invoke(app, ["profile", arg, *extra, "--json", str(out), "--force"])
            assert res.exit_code == 0, res.output
            docs.append(json.loads(out.read_text()))
        assert docs[0] == docs[1]
        assert docs[0]["source"]["n_files"] == 3 and docs[0]["source"]["engine"]["engine"] == "embedded"
        _same_numbers(truth, docs[0])


def test_relative_clock_file_and_time_origin_option(tmp_path):
    fr = _frame(20_000).with_columns(pl.col("start_s") - T0)
    f = tmp_path / "rel.parquet"
    fr.write_parquet(f)  # no metadata: start < 1e9, read as relative
    a = profile_dataset(f).to_dict()
    assert a["source"]["time_origin"] == "relative"
    _same_numbers(profile_traffic(load(f)).to_dict(), a)


def test_non_canonical_parquet_falls_back_to_the_loaders(tmp_path):
    f = tmp_path / "g.parquet"
    _frame(5_000).rename({"start_s": "ts"}).write_parquet(f)
    res = runner.invoke(app, ["profile", str(f), "--json", str(tmp_path / "p.json")])
    # the loaders do not know this layout either: the error is theirs, after the note
    assert "not a bearing-canonical Parquet file" in res.output


def test_large_csv_is_converted_once_and_reused(tmp_path, monkeypatch):
    monkeypatch.setenv("BEARING_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("BEARING_PARQUET_CACHE_MIN_BYTES", "1000")
    csv = tmp_path / "big.csv"
    _frame(30_000).write_csv(csv)
    out = tmp_path / "p.json"
    res = runner.invoke(app, ["profile", str(csv), "--json", str(out)])
    assert res.exit_code == 0, res.output
    assert "converted once to Parquet" in res.output
    d = json.loads(out.read_text())
    assert d["source"]["path"] == str(csv) and d["source"]["format"] == "bearing-canonical"
    assert d["source"]["parquet_cache"].endswith(".parquet")
    _same_numbers(profile_traffic(load(csv)).to_dict(), d)
    res = runner.invoke(app, ["profile", str(csv), "--json", str(out), "--force"])
    assert res.exit_code == 0 and "reusing the Parquet copy" in res.output
    assert json.loads(out.read_text()) == d
    # a changed source is a new key: converted again
    _frame(30_001).write_csv(csv)
    res = runner.invoke(app, ["profile", str(csv), "--json", str(out), "--force"])
    assert "converted once to Parquet" in res.output


def test_small_csv_stays_in_memory(tmp_path, monkeypatch):
    monkeypatch.setenv("BEARING_CACHE_DIR", str(tmp_path / "cache"))
    csv = tmp_path / "small.csv"
    _frame(5_000).write_csv(csv)
    out = tmp_path / "p.json"
    res = runner.invoke(app, ["profile", str(csv), "--json", str(out)])
    assert res.exit_code == 0 and "note:" not in res.output
    assert json.loads(out.read_text())["source"]["format"] == "bearing-canonical"
    assert not (tmp_path / "cache").exists()


def test_json_to_stdout_is_json_alone(tmp_path):
    f = write_trace(_trace(_frame(5_000)), tmp_path / "t.parquet")
    res = runner.invoke(app, ["profile", str(f), "--json", "-"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["per_minute"]["available"] is True


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_quiet_rule(monkeypatch):
    monkeypatch.delenv("BEARING_NO_PROGRESS", raising=False)
    assert progress_wanted(stream=_Tty()) is True
    assert progress_wanted(stream=io.StringIO()) is False  # not a terminal (pipes, files, CI logs)
    assert progress_wanted(json_only=True, stream=_Tty()) is False  # --json -: JSON alone
    monkeypatch.setenv("BEARING_NO_PROGRESS", "1")
    assert progress_wanted(stream=_Tty()) is False
    monkeypatch.delenv("BEARING_NO_PROGRESS")
    monkeypatch.setattr("bearing_lib.common.progress.in_notebook", lambda: True)
    assert progress_wanted(stream=_Tty()) is False  # a notebook kernel


def test_progress_bar_counts_every_request(tmp_path):
    f = write_trace(_trace(_frame(20_000)), tmp_path / "t.parquet")
    seen = []

    class P:
        def start(self, total):
            seen.append(("start", total))

        def advance(self, n):
            seen.append(("advance", n))

        def step(self, text):
            seen.append(("step", text))

    profile_dataset(f, progress=P())
    assert seen[0] == ("start", 20_000)
    assert sum(n for k, n in seen if k == "advance") == 20_000


def test_gap_summary_is_numpys_arithmetic():
    rng = np.random.default_rng(1)
    s = np.sort(np.round(rng.uniform(0, 1000, 50_000), 3))
    g = np.diff(s)
    res, n_gaps, cv = gap_summary(s.copy(), s.size)
    assert n_gaps == g.size and cv == float(g.std(ddof=1) / g.mean())
    assert res.n_distinct_start_times == int((g > 0).sum()) + 1 and res.smallest_gap_s == float(g[g > 0].min())
    q = np.sort(np.repeat(np.arange(0, 300.0, 3.0), 5))  # a 3 s grid
    res, _, _ = gap_summary(q.copy(), q.size)
    assert res.quantized and res.quantum_s == pytest.approx(3.0)
