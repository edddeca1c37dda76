"""SGLang bench_serving JSONL loader, on the real datacrunch H200 files (MIT; read in place).

Expected values come from the raw lines parsed in the test with the json module.
"""

from __future__ import annotations

import json
import math

import pytest
from typer.testing import CliRunner

from bearing_lib import load
from bearing_lib.cli.main import app
from bearing_lib.common.errors import BadValueError, UnsupportedVersionError

SHARED = "loadtests/sglang-bench-serving/datacrunch-h200-benchmarks/"


def _lines(path):
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


@pytest.mark.shared_data
def test_several_rates_in_one_file_grouped_by_dataset(shared_data):
    path = shared_data(SHARED + "llama_3_3_70b_online_output.jsonl")
    raw = _lines(path)
    lp = load(path)
    f = lp.frame
    assert lp.provenance.format == "sglang-bench-serving" and f.height == len(raw) == 7
    groups = {}
    for d in raw:
        groups.setdefault(d["dataset_name"], []).append(d)
    assert f["run_id"].n_unique() == len(groups) == 2
    for ds, lines in groups.items():
        lines.sort(key=lambda d: d["request_rate"])
        run = f.filter(f["run_id"].str.contains(f"/{ds}")).sort("step")
        assert run["step"].to_list() == list(range(len(lines)))
        assert run["offered_load"].to_list() == [d["request_rate"] for d in lines]
        assert run["n_ok"].to_list() == [d["completed"] for d in lines]
        assert run["latency_ms_mean"].to_list() == [d["mean_e2e_latency_ms"] for d in lines]
        assert run["latency_ms_p50"].to_list() == [d["median_e2e_latency_ms"] for d in lines]
        assert run["ttft_ms_p50"].to_list() == [d["median_ttft_ms"] for d in lines]
        assert run["itl_ms_p50"].to_list() == [d["median_itl_ms"] for d in lines]
        assert run["throughput_rps"].to_list() == pytest.approx([d["completed"] / d["duration"] for d in lines])
        assert run["ttft_ms_p99"].null_count() == run.height  # the 18-key line has no P99
    assert lp.provenance.fields["throughput_rps"] == "derived"
    assert f["n_errors"].null_count() == f.height  # SGLang counts successes only


@pytest.mark.shared_data
def test_bare_infinity_rate(shared_data):
    path = shared_data(SHARED + "llama_3_3_70b_offline_output.jsonl")
    text = path.read_text()
    assert '"request_rate": Infinity' in text  # bare token, invalid strict JSON
    with pytest.raises(ValueError):
        json.loads(text.splitlines()[0], parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
    lp = load(path)
    assert all(math.isinf(x) for x in lp.frame["offered_load"])
    assert any(x.code == "unbounded_rate" for x in lp.provenance.findings)
    # two lines with identical arguments (random 4096/1024) are repeats of one run, in file order
    raw = _lines(path)
    dup = [d for d in raw if (d["random_input_len"], d["random_output_len"]) == (4096, 1024)]
    run = lp.frame.filter(lp.frame["run_id"].str.contains("in4096-out1024")).sort("step")
    assert run["duration_s"].to_list() == [d["duration"] for d in dup]
    assert any(x.code == "repeated_load_level" for x in lp.provenance.findings)


@pytest.mark.shared_data
def test_every_sglang_file_loads(shared_data):
    base = shared_data(SHARED.rstrip("/"))
    for p in sorted(base.rglob("*.jsonl")):
        assert load(p).frame.height == len(_lines(p))


def test_missing_fields_fail_with_version_error(tmp_path):
    # SYNTHETIC: a line with SGLang's identifying keys but none of the statistics
    p = tmp_path / "out.jsonl"
    p.write_text('{"backend": "sglang", "dataset_name": "random", "request_rate": 1.0, "completed": 3}\n')
    with pytest.raises(UnsupportedVersionError) as exc:
        load(p)
    assert exc.value.tool == "SGLang bench_serving"
    assert {"duration", "output_throughput", "max_concurrency"} <= set(exc.value.missing)


def test_concurrency_sweep_and_bad_line(tmp_path):
    # SYNTHETIC: unbounded rate with max_concurrency set makes concurrency the load
    base = {"backend": "sglang", "dataset_name": "random", "request_rate": "Infinity", "duration": 10.0,
            "completed": 20, "total_input_tokens": 100, "total_output_tokens": 100, "output_throughput": 10.0,
            "random_input_len": 1, "random_output_len": 1, "random_range_ratio": 0.0, "sharegpt_output_len": None,
            "p99_ttft_ms": 50.0, "request_throughput": 2.0}
    lines = [json.dumps({**base, "max_concurrency": c}).replace('"Infinity"', "Infinity") for c in (8, 2)]
    p = tmp_path / "conc.jsonl"
    p.write_text("\n".join(lines) + "\n")
    f = load(p).frame
    assert f["offered_load"].to_list() == [2.0, 8.0] and set(f["offered_load_unit"]) == {"concurrency"}
    assert f["run_id"].n_unique() == 1 and f["ttft_ms_p99"].to_list() == [50.0, 50.0]
    assert f["throughput_rps"].to_list() == [2.0, 2.0]
    p.write_text(lines[0] + "\n{not json\n")
    with pytest.raises(BadValueError, match="row 2"):
        load(p)


@pytest.mark.shared_data
def test_cli_inspect_sglang(shared_data):
    res = CliRunner().invoke(app, ["inspect", str(shared_data(SHARED + "llama_405b_online_output.jsonl"))])
    assert res.exit_code == 0, res.output
    assert "sglang-bench-serving (SGLang bench_serving, version not stated in the file)" in res.output
    assert "late-2024" in res.output
