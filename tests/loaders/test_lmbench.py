"""LMCache LMBenchmark CSV loader, on the bundled real sweeps (data/loadtests/lmbenchmark-llm-d-exp2).

Expected values are computed independently in each test with the csv module from the raw
files. The bundled copy is byte-identical to shared/data/loadtests/lmbenchmark/ (Apache-2.0).
"""

from __future__ import annotations

import csv
import re
import shutil

import polars as pl
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
    # on LMBenchmark's fixed schedule with every slot filled: no request is absent
    assert {"absent_requests_none", "offered_load_from_file_name"} <= codes and "no_error_column" not in codes
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
    recorded = sum(len(_rows(p)) for p in files)
    assert recorded == 30_296
    # the llm-d sharegpt files drop failed requests; each of their 20 steps sent the 252 prompts its vLLM
    # sibling (same prompt list, nothing lost) recorded, and bearing puts the absent ones back as failed rows
    llmd = [p for p in files if p.parent.name == "llm-d-70b-2replicas" and "sharegpt" in p.name]
    absent = sum(252 - len(_rows(p)) for p in llmd)
    assert len(tr) == recorded + absent == 30_296 + 2_829
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
    # per-step request counts equal the file row counts, plus the absent ones of the llm-d sharegpt steps
    per = tr.frame.group_by("run_id", "offered_load").len()
    for p in files:
        workload, qps = parse_name(p.name)
        n = per.filter((per["run_id"] == f"{p.parent.name}/{workload}") & (per["offered_load"] == qps))["len"]
        assert n.item() == (252 if p in llmd else len(_rows(p)))


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
    tr = load(folder, absent="ignore")  # as recorded: the lost rows are not put back
    (finding,) = [x for x in tr.provenance.findings if x.code == "offered_load_mismatch"]
    assert finding.count == len(expected) == 17
    for name in expected:
        assert name in finding.message


def test_absent_requests_come_back_as_failed_rows_at_their_slots(bundled):
    """Checked against the vLLM sibling sweep: the same prompt list at the same QPS, sent complete (252 rows
    per step), so slot k there is prompt k here; the absent llm-d rows must sit at those launch slots and carry
    those prompts' lengths (within the QPS prefix's few tokens) wherever llm-d completed the prompt elsewhere."""
    folder = bundled(ROOT)
    tr = load(folder)
    f = tr.frame.filter(pl.col("run_id") == "llm-d-70b-2replicas/sharegpt")
    codes = {x.code: x for x in tr.provenance.findings}
    assert "offered_load_mismatch" not in codes  # the holes explain every low launch rate
    assert codes["absent_requests_failed"].count + codes["absent_requests_unknown"].count == 2_829
    # the highest recorded latency: a 30 s ceiling
    assert "29.9 s in llm-d-70b-2replicas/sharegpt" in codes["absent_requests_failed"].message
    for qps in (0.5, 2.0, 10.0):
        name = f"LMBench_sharegpt_output_{qps:g}.csv"
        mine = _rows(folder / "llm-d-70b-2replicas" / name)
        sib = _rows(folder / "vllm-70b-2replicas" / name)
        assert len(sib) == 252
        t0 = min(float(r["launch_time"]) for r in mine)
        s0 = min(float(r["launch_time"]) for r in sib)
        sib_by_slot = {round((float(r["launch_time"]) - s0) * qps): int(r["prompt_tokens"]) for r in sib}
        have = {round((float(r["launch_time"]) - t0) * qps) for r in mine}
        holes = sorted(set(range(252)) - have)
        step = f.filter(pl.col("offered_load") == qps)
        lost = step.filter(pl.col("status").is_in(["error", "unknown"])).sort("start_s")
        assert lost.height == len(holes) == 252 - len(mine)
        assert lost["start_s"].to_list() == pytest.approx([t0 + k / qps for k in holes], abs=1e-9)
        assert lost["end_s"].is_null().all() and lost["ttft_ms"].is_null().all()
        assert lost["output_tokens"].is_null().all()
        assert all(e.startswith("absent:") for e in lost["error"].to_list())
        known = [(k, v) for k, v in zip(holes, lost["input_tokens"].to_list(), strict=True) if v is not None]
        assert len(known) >= len(holes) - 4  # 4 prompts never completed on llm-d at any QPS
        assert all(abs(v - sib_by_slot[k]) <= 4 for k, v in known)
    # at 0.5 rps 4 of 252 failed: 1.6 %, an error rate the SLA now sees
    s05 = f.filter(pl.col("offered_load") == 0.5)
    assert (s05["status"] != "ok").sum() == 4


def test_no_trailing_failures_are_invented_when_a_time_limit_explains_them(tmp_path, bundled):
    """A ``--time`` limit cuts the *low*-QPS steps short (they take longest to dispatch): with only a higher
    QPS step complete, the shorter low-QPS step gets no failures after its last launch."""
    src = bundled(f"{ROOT}/vllm-70b-2replicas/LMBench_sharegpt_output_1.csv")
    rows = _rows(src)
    t0 = min(float(r["launch_time"]) for r in rows)
    head = src.read_text().splitlines()[0]
    keep = [ln for ln, r in zip(src.read_text().splitlines()[1:], rows, strict=True)
            if float(r["launch_time"]) - t0 < 100.0]  # the first 100 prompts: a 100 s time limit
    (tmp_path / "LMBench_sharegpt_output_1.csv").write_text("\n".join([head, *keep]) + "\n")
    shutil.copyfile(bundled(f"{ROOT}/vllm-70b-2replicas/LMBench_sharegpt_output_2.csv"),
                    tmp_path / "LMBench_sharegpt_output_2.csv")
    tr = load(tmp_path)
    assert (tr.frame["status"] == "ok").all() and len(tr) == len(keep) + 252
    assert "absent_requests_none" in {x.code for x in tr.provenance.findings}


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


def test_absent_requests_certainly_failed_or_unknown_by_hand(bundled):
    """Of the 2,829 put-back requests of the llm-d sweep, only those launched earlier than the step's last
    recorded end minus the run's highest recorded latency had surely completed or raised before LMBenchmark
    stopped collecting (its WaitLoop ends at the first exception after the last launch: LMCache/LMBenchmark
    sharegpt/utils.py); absent, they raised: ``error``. The rest are ``unknown``. Computed here from the raw
    CSVs: slot of prompt k from the vLLM sibling (complete, same prompts), the llm-d step's own first launch
    and QPS for the slot times (every llm-d step's first recorded launch is prompt 0: checked)."""
    folder = bundled(ROOT)
    llmd = sorted((folder / "llm-d-70b-2replicas").glob("LMBench_sharegpt_output_*.csv"))
    rows = {p.name: _rows(p) for p in llmd}
    ceiling = max(float(r["finish_time"]) - float(r["launch_time"]) for rs in rows.values() for r in rs)
    assert ceiling == pytest.approx(29.892, abs=1e-3)
    want: dict[float, tuple[int, int]] = {}
    for p in llmd:
        qps, mine = _qps(p.name), rows[p.name]
        sib = _rows(folder / "vllm-70b-2replicas" / p.name)
        s0 = min(float(r["launch_time"]) for r in sib)
        sib_slot = {round((float(r["launch_time"]) - s0) * qps): int(r["prompt_tokens"]) for r in sib}
        t0 = min(float(r["launch_time"]) for r in mine)
        have = {round((float(r["launch_time"]) - t0) * qps) for r in mine}
        assert all(sib_slot[k] == int(r["prompt_tokens"]) for k, r in
                   zip([round((float(r["launch_time"]) - t0) * qps) for r in mine], mine, strict=True))
        last_end = max(float(r["finish_time"]) for r in mine)
        missing = [k for k in range(252) if k not in have]
        bad = sum(t0 + k / qps + ceiling < last_end for k in missing)
        want[qps] = (bad, len(missing) - bad)
    assert sum(b for b, _ in want.values()) == 277
    assert sum(u for _, u in want.values()) == 2_552
    tr = load(folder)
    f = tr.frame.filter(pl.col("run_id") == "llm-d-70b-2replicas/sharegpt")
    got = {q: ((s["status"] == "error").sum(), (s["status"] == "unknown").sum())
           for (q,), s in f.group_by("offered_load")}
    assert got == want
    codes = {x.code: x for x in tr.provenance.findings}
    assert codes["absent_requests_failed"].count == 277
    assert codes["absent_requests_unknown"].count == 2_552
    assert "LMBench_sharegpt_output_10.csv: 197 of 252 absent (78.2%): 2 failed, 195 unknown" in \
        codes["absent_requests_failed"].message
    unknown = f.filter(pl.col("status") == "unknown")
    assert unknown["end_s"].is_null().all() and all("outcome unknown" in e for e in unknown["error"].to_list())
    # the vLLM sibling loses nothing: no error and no unknown row
    sib = tr.frame.filter(pl.col("run_id") == "vllm-70b-2replicas/sharegpt")
    assert (sib["status"] == "ok").all()
