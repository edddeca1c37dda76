"""Files users have that bearing used to refuse: vLLM --append-result files, and detection messages that
name the JSON shape found.

``vllm bench serve --append-result`` (vllm-project/vllm ``vllm/benchmarks/serve.py``, ``main``) opens the
result file in ``a+`` mode, writes a newline when it is not empty and ``json.dump``s the run: one result
per line. The test files are written here exactly that way (SYNTHETIC results, or the real surajssd results
re-written), and expected values come from the same raw dicts.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import polars as pl
import pytest

from bearing_lib import FormatDetectionError, load
from bearing_lib.data.loadpoints import LoadPointTable
from bearing_lib.loaders import detect
from bearing_lib.loaders.source import InputSource

SURAJ = "loadtests/vllm-bench-serve/surajssd-llm-k8s-azure-a100/llama-3.3-70b/01_tp8_pp1"


def _append(path: Path, doc: dict) -> None:
    """As vLLM's main() with --append-result: a+ mode, a newline before every run but the first."""
    with open(path, "a+", encoding="utf-8") as out:
        if out.tell() != 0:
            out.write("\n")
        json.dump(doc, out)


def _summary(rate: float | str, completed: int, duration: float, **over) -> dict:
    """SYNTHETIC: a vllm bench serve result without per-request arrays (v0.25.1 keys)."""
    doc = {"date": "20250101-000000", "endpoint_type": "vllm", "backend": "vllm", "label": None,
           "model_id": "m", "tokenizer_id": "m", "num_prompts": 100, "request_rate": rate, "burstiness": 1.0,
           "max_concurrency": None, "duration": duration, "completed": completed, "failed": 100 - completed,
           "total_input_tokens": 1000, "total_output_tokens": 3000, "request_throughput": completed / duration,
           "request_goodput": None, "output_throughput": 3000 / duration, "total_token_throughput": 4000 / duration,
           "mean_ttft_ms": 50.0, "median_ttft_ms": 45.0, "p99_ttft_ms": 120.0}
    doc.update(over)
    return doc


def test_append_result_file_of_summaries_is_one_sweep(tmp_path):
    p = tmp_path / "vllm-sweep.json"
    docs = [_summary(4.0, 100, 30.0), _summary(1.0, 100, 102.0), _summary("inf", 98, 20.0)]
    for d in docs:
        _append(p, d)
    assert p.read_text().count("\n") == 2  # three lines, as vLLM writes them
    assert detect(p).name == "vllm-bench-serve"
    t = load(p)
    assert isinstance(t, LoadPointTable)
    f = t.frame.sort("step")
    assert f["run_id"].unique().to_list() == ["vllm-sweep"]  # one run: the file
    assert f["offered_load"].to_list() == [1.0, 4.0, float("inf")]  # steps ordered by load
    assert f["n_ok"].to_list() == [100, 100, 98]
    assert f["throughput_rps"].to_list() == pytest.approx([100 / 102.0, 100 / 30.0, 98 / 20.0])
    assert f["source_file"].to_list() == ["vllm-sweep.json[1]", "vllm-sweep.json[0]", "vllm-sweep.json[2]"]


@pytest.mark.shared_data
def test_append_result_file_with_per_request_arrays_reads_like_the_folder(shared_data, tmp_path):
    folder = shared_data(SURAJ)
    p = tmp_path / "appended.json"
    for f in sorted(folder.glob("*.json.gz")):
        _append(p, json.loads(gzip.decompress(f.read_bytes())))
    assert detect(p).name == "vllm-bench-serve-requests"
    a, b = load(p), load(folder)
    cols = ["step", "offered_load", "ttft_ms", "latency_ms", "input_tokens", "output_tokens", "status"]
    assert a.frame.select(cols).sort(cols, nulls_last=True).equals(b.frame.select(cols).sort(cols, nulls_last=True))
    assert a.steps["send_window_s"].to_list() == b.steps["send_window_s"].to_list()
    assert a.frame["run_id"].unique().to_list() == ["appended"]


def test_detection_names_the_json_shape_found(tmp_path):
    # one JSON object on one line, longer than the 64 KiB head: no complete first line in the head
    big = tmp_path / "big.json"
    big.write_text(json.dumps({"alpha": "x" * 70_000, "beta": [1, 2]}))
    assert InputSource(big).describe() == "a JSON object with keys ['alpha', 'beta']"
    with pytest.raises(FormatDetectionError) as exc:
        load(big)
    assert "Found a JSON object with keys ['alpha', 'beta']" in str(exc.value)
    assert "first line is ''" not in str(exc.value)
    # a small one-line object is one object, not "JSON lines"
    one = tmp_path / "one.json"
    one.write_text('{"b": 1, "a": 2}')
    assert InputSource(one).describe() == "a JSON object with keys ['a', 'b']"
    # JSON lines, an array, and JSON that breaks
    jl = tmp_path / "x.json"
    jl.write_text('{"k": 1}\n{"k": 2}\n{"k": 3}\n')
    assert InputSource(jl).describe() == "JSON lines (3 objects); the first has keys ['k']"
    arr = tmp_path / "arr.json"
    arr.write_text('[{"z": 1}, {"z": 2}]')
    assert InputSource(arr).describe() == "a JSON array of 2 items; the first has keys ['z']"
    bad = tmp_path / "bad.json"
    bad.write_text('{"a": 1,\n "b": }')
    d = InputSource(bad).describe()
    assert d.startswith("text that starts like JSON but does not parse: ") and "line 2, column 7" in d


def test_one_line_frame_still_reads(tmp_path):
    """The appended reader does not claim a plain one-result file: it stays one step."""
    p = tmp_path / "one.json"
    _append(p, _summary(2.0, 100, 60.0))
    t = load(p)
    assert isinstance(t, LoadPointTable) and t.frame.height == 1
    assert t.frame["offered_load"].to_list() == [2.0]
    assert isinstance(t.frame, pl.DataFrame)


def test_folder_with_loose_results_and_sub_folders_reads_every_level(tmp_path):
    """SYNTHETIC: a loose result beside a deployment folder (two rates) and a nested sweep root; a folder of
    plots and one whose results sit too deep are named as skipped, with why."""
    root = tmp_path / "bench"
    (root / "deploy-a").mkdir(parents=True)
    (root / "plots").mkdir()
    (root / "old" / "x" / "y").mkdir(parents=True)
    combo = root / "sweep" / "SERVE--max_num_seqs=4-BENCH--request_rate=3"
    combo.mkdir(parents=True)
    (root / "baseline.json").write_text(json.dumps(_summary(1.0, 100, 101.0)))
    (root / "deploy-a" / "r2.json").write_text(json.dumps(_summary(2.0, 100, 52.0)))
    (root / "deploy-a" / "r4.json").write_text(json.dumps(_summary(4.0, 90, 30.0)))
    (combo / "run=0.json").write_text(json.dumps(_summary(3.0, 100, 35.0)))
    (root / "plots" / "ttft.png").write_bytes(b"\x89PNG")
    (root / "old" / "x" / "y" / "r8.json").write_text(json.dumps(_summary(8.0, 50, 20.0)))
    t = load(root)
    f = t.frame.sort("run_id", "step")
    runs = {r: g["offered_load"].to_list() for (r,), g in f.group_by("run_id", maintain_order=True)}
    assert runs == {"SERVE--max_num_seqs=4-BENCH--request_rate=3": [3.0], "bench": [1.0], "deploy-a": [2.0, 4.0]}
    codes = {x.code: x for x in t.provenance.findings}
    assert "every level was read" in codes["folder_levels"].message
    skipped = codes["folders_skipped"]
    assert skipped.count == 2 and "old, plots" in skipped.message and "were not read" in skipped.message
