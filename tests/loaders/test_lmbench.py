"""LMCache LMBenchmark CSV loader, on the bundled real sweeps (data/loadtests/lmbenchmark-llm-d-exp2).

Expected values are computed independently in each test with the csv module from the raw
files. The bundled copy is byte-identical to shared/data/loadtests/lmbenchmark/ (Apache-2.0).
"""

from __future__ import annotations

import csv
import re
import shutil

import pytest

from bearing_lib import UnsupportedVersionError, load, load_trace
from bearing_lib.loaders import detect
from bearing_lib.loaders.lmbench import parse_name

ROOT = "loadtests/lmbenchmark-llm-d-exp2"


def _rows(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def _qps(name):
    return float(re.search(r"(?:output_|qps)(\d+(?:\.\d+)?)\.csv$", name).group(1))


def test_single_sharegpt_file_units_and_values(bundled):
    path = bundled(f"{ROOT}/vllm-70b-2replicas/LMBench_sharegpt_output_0.5.csv")
    before = path.read_bytes()
    tr = load_trace(path)
    rows = _rows(path)
    assert len(tr) == len(rows) == 252
    f = tr.frame.sort("source_row")
    # ttft seconds -> ms; latency = finish - launch (epoch s) -> ms
    assert f["ttft_ms"].to_list() == pytest.approx([float(r["ttft"]) * 1000 for r in rows])
    assert f["latency_ms"].to_list() == pytest.approx(
        [(float(r["finish_time"]) - float(r["launch_time"])) * 1000 for r in rows], rel=1e-9
    )
    assert f["start_s"].to_list() == pytest.approx([float(r["launch_time"]) for r in rows], abs=1e-6)
    tpot = [
        float(r["generation_time"]) * 1000 / (int(r["generation_tokens"]) - 1)
        for r in rows
        if int(r["generation_tokens"]) > 1
    ]
    assert f["tpot_ms"].drop_nulls().to_list() == pytest.approx(tpot)
    assert f["input_tokens"].sum() == sum(int(r["prompt_tokens"]) for r in rows)
    assert f["output_tokens"].sum() == sum(int(r["generation_tokens"]) for r in rows)
    assert set(f["status"]) == {"ok"}
    assert set(f["offered_load"]) == {0.5} and set(f["offered_load_unit"]) == {"rps"}
    assert f["run_id"][0] == "vllm-70b-2replicas/sharegpt"
    codes = {x.code for x in tr.provenance.findings}
    assert {"no_error_column", "offered_load_from_file_name"} <= codes
    assert "offered_load_mismatch" not in codes  # 251 / 502.0 s = 0.5 rps
    assert tr.provenance.fields["tpot_ms"] == "derived"
    assert tr.provenance.fields["ttft_ms"] == "measured"
    assert tr.steps.to_dicts()[0]["offered_load"] == 0.5
    assert path.read_bytes() == before


def test_multi_round_layout_float_token_counts(bundled):
    path = bundled(f"{ROOT}/llm-d-70b-2replicas/LMBench_short_input_qps10.csv")
    rows = _rows(path)
    tr = load_trace(path)
    assert len(tr) == len(rows) == 1051
    assert tr.frame["input_tokens"].sum() == sum(int(float(r["prompt_tokens"])) for r in rows)
    ids = {f"llm-d-70b-2replicas/{path.name}:u{r['user_id']}-q{r['question_id']}" for r in rows}
    assert set(tr.frame["request_id"]) == ids
    assert tr.frame["run_id"][0] == "llm-d-70b-2replicas/short_input"
    assert any("multi-round" in x.message for x in tr.provenance.findings)


def test_folder_is_runs_with_steps_ordered_by_qps(bundled):
    folder = bundled(ROOT)
    tr = load(folder)
    files = sorted(folder.rglob("*.csv"))
    expect_n = sum(len(_rows(p)) for p in files)
    assert len(tr) == expect_n == 30_296
    steps = tr.steps
    assert steps.height == len(files) == 84
    for run in ("vllm-70b-2replicas/sharegpt", "llm-d-70b-2replicas/short_input"):
        s = steps.filter(steps["run_id"] == run)
        loads = s["offered_load"].to_list()
        assert loads == sorted(loads)
        assert s["step"].to_list() == list(range(s.height))
    vllm_share = sorted(_qps(p.name) for p in (folder / "vllm-70b-2replicas").glob("LMBench_sharegpt_*.csv"))
    got = steps.filter(steps["run_id"] == "vllm-70b-2replicas/sharegpt")["offered_load"].to_list()
    assert got == vllm_share and len(got) == 24
    # per-step request counts equal the file row counts
    per = tr.frame.group_by("run_id", "offered_load").len()
    for p in files:
        workload, qps = parse_name(p.name)
        n = per.filter((per["run_id"] == f"{p.parent.name}/{workload}") & (per["offered_load"] == qps))["len"]
        assert n.item() == len(_rows(p))


def test_name_rate_cross_checked_against_launch_rate(bundled):
    folder = bundled(ROOT)
    expected = set()
    for p in sorted(folder.rglob("*.csv")):
        rows = _rows(p)
        launches = [float(r["launch_time"]) for r in rows]
        measured = (len(rows) - 1) / (max(launches) - min(launches))
        if abs(measured / _qps(p.name) - 1) > 0.10:
            expected.add(p.name)
    assert expected  # the llm-d sharegpt files lose rows at high QPS
    tr = load(folder)
    (finding,) = [x for x in tr.provenance.findings if x.code == "offered_load_mismatch"]
    assert finding.count == len(expected) == 17
    for name in expected:
        assert name in finding.message


def test_unknown_layout_names_missing_fields(tmp_path):
    p = tmp_path / "LMBench_sharegpt_output_1.csv"
    p.write_text("prompt_tokens,ttft,generation_time,launch_time\n10,0.1,1.0,1700000000.0\n")
    with pytest.raises(UnsupportedVersionError) as exc:
        load(p)
    assert exc.value.tool == "LMCache LMBenchmark"
    assert exc.value.missing == ["generation_tokens", "finish_time"]
    assert "generation_tokens" in str(exc.value)


def test_file_without_rate_in_name(tmp_path, bundled):
    src = bundled(f"{ROOT}/vllm-70b-2replicas/LMBench_sharegpt_output_1.csv")
    p = tmp_path / "my_run.csv"
    shutil.copyfile(src, p)
    tr = load(p)
    assert tr.frame["offered_load"].is_null().all()
    assert any(x.code == "offered_load_unknown" for x in tr.provenance.findings)


def test_detection_is_content_based(bundled):
    assert detect(bundled(f"{ROOT}/vllm-70b-2replicas/LMBench_sharegpt_output_1.csv")).name == "lmbench-csv"
    assert detect(bundled(ROOT)).name == "lmbench-csv"


def test_gzipped_files_in_a_folder(tmp_path, bundled):
    import gzip

    src = bundled(f"{ROOT}/vllm-70b-2replicas")
    for name in ("LMBench_sharegpt_output_1.csv", "LMBench_sharegpt_output_2.csv"):
        (tmp_path / f"{name}.gz").write_bytes(gzip.compress((src / name).read_bytes()))
    tr = load(tmp_path)
    assert tr.steps["offered_load"].to_list() == [1.0, 2.0]
    n = sum(len(_rows(src / f"LMBench_sharegpt_output_{q}.csv")) for q in (1, 2))
    assert len(tr) == n
