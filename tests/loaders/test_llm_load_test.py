"""llm-load-test output JSON (one file per concurrency), on files built here in the tool's layout.

No real llm-load-test output is published (shared/data/loadtests/README.md §8), so the
fixtures follow the layout of ``src/llm_load_test/utils.py`` / ``result.py``: the tool's
derived fields (``response_time``, ``ttft``, ``itl`` in ms) are computed from the epoch
times exactly as the tool does, and the expected canonical values are recomputed from the
same dicts with plain Python.
"""

from __future__ import annotations

import json
import random

import pytest

from bearing_lib.common.errors import BadValueError, FormatDetectionError
from bearing_lib.loaders import detect, load


def _request(rng: random.Random, user: int, i: int, t0: float, *, error: str | None = None,
             code: int | None = None, late: bool = False) -> dict:
    start = t0 + i * 0.7 + user * 0.05
    out = rng.randint(2, 300)
    first = start + rng.uniform(0.05, 0.4)
    end = first + out * rng.uniform(0.01, 0.03)
    r = {"user_id": user, "input_id": i, "input_tokens": rng.randint(10, 900), "output_text": "x" * 5,
         "output_tokens": out, "output_tokens_before_timeout": out - 1 if late else out, "start_time": start,
         "ack_time": start + 0.01, "first_token_time": first, "end_time": end, "response_time": None,
         "tt_ack": None, "ttft": None, "itl": None, "tpot": None, "stop_reason": "length",
         "error_code": code, "error_text": error}
    if error is None and code is None:  # result.calculate_results
        r["response_time"] = 1000 * (end - start)
        r["tt_ack"] = 1000 * 0.01
        r["ttft"] = 1000 * (first - start)
        r["itl"] = 1000 * (end - first) / (out - 1)
        r["tpot"] = r["response_time"] / out
    else:
        r["output_tokens"] = None
        r["output_tokens_before_timeout"] = None
        r["first_token_time"] = None
    return r


def _doc(concurrency: int, n: int, seed: int, *, failures: dict[int, tuple[str | None, int | None]] | None = None,
         late: tuple[int, ...] = ()) -> dict:
    rng = random.Random(seed)
    results = [_request(rng, i % concurrency, i, 1_700_000_000.0, error=(failures or {}).get(i, (None, None))[0],
                        code=(failures or {}).get(i, (None, None))[1], late=i in late) for i in range(n)]
    config = {"output": {"dir": "./output/", "file": "output-{concurrency:03d}.json"},
              "load_options": {"type": "constant", "concurrency": concurrency, "duration": 60},
              "plugin": "openai_plugin", "plugin_options": {"model_name": "granite-8b", "streaming": True}}
    return {"results": results, "config": config, "summary": {"total_requests": n}}


@pytest.fixture
def sweep(tmp_path):
    folder = tmp_path / "sweep"
    folder.mkdir()
    docs = {
        1: _doc(1, 12, 1),
        4: _doc(4, 20, 2, failures={3: ("Read timed out", None), 7: ("Too Many Requests", 429), 9: ("boom", 500)},
                late=(5,)),
        16: _doc(16, 30, 3),
    }
    for c, d in docs.items():
        (folder / f"output-{c:03d}.json").write_text(json.dumps(d))
    (folder / "README.md").write_text("# run notes\n")
    return folder, docs


def test_folder_is_one_run_with_a_step_per_concurrency(sweep):
    folder, docs = sweep
    assert detect(folder).name == "llm-load-test"
    ds = load(folder)
    f = ds.frame.sort(["step", "source_row"])
    assert ds.kind == "requests" and f.height == 12 + 20 + 30
    assert f["offered_load_unit"].unique().to_list() == ["concurrency"]
    by_step = {s: f.filter(f["step"] == s) for s in (0, 1, 2)}
    assert [by_step[s]["offered_load"][0] for s in (0, 1, 2)] == [1.0, 4.0, 16.0]
    assert f["run_id"].unique().to_list() == ["sweep"]
    for step, c in enumerate((1, 4, 16)):
        got = by_step[step].to_dicts()
        for row, r in zip(got, docs[c]["results"], strict=True):
            assert row["start_s"] == pytest.approx(r["start_time"])
            assert row["end_s"] == pytest.approx(r["end_time"])
            assert row["input_tokens"] == r["input_tokens"]
            assert row["output_tokens"] == r["output_tokens"]
            if r["error_text"] is None:
                assert row["status"] == "ok"
                assert row["ttft_ms"] == pytest.approx(1000 * (r["first_token_time"] - r["start_time"]))
                assert row["latency_ms"] == pytest.approx(1000 * (r["end_time"] - r["start_time"]))
                assert row["tpot_ms"] == pytest.approx(
                    1000 * (r["end_time"] - r["first_token_time"]) / (r["output_tokens"] - 1))
            else:
                assert row["ttft_ms"] is None and row["output_tokens"] is None
                assert row["latency_ms"] == pytest.approx(1000 * (r["end_time"] - r["start_time"]))
                assert row["error"] == r["error_text"]
    st = by_step[1].sort("source_row")["status"].to_list()
    assert (st[3], st[7], st[9]) == ("timeout", "rejected", "error")
    assert st.count("ok") == 17
    assert f["model"].unique().to_list() == ["granite-8b"]
    codes = {x.code: x for x in ds.provenance.findings}
    assert codes["completed_after_duration"].count == 1
    assert ds.steps["duration_s"].to_list() == [60.0, 60.0, 60.0]


def test_one_file_reads_alone_and_concurrency_falls_back_to_the_file_name(tmp_path):
    d = _doc(8, 5, 4)
    d["config"]["load_options"].pop("concurrency")
    p = tmp_path / "output-008.json"
    p.write_text(json.dumps(d))
    assert detect(p).name == "llm-load-test"
    ds = load(p)
    assert ds.frame["offered_load"].unique().to_list() == [8.0]
    assert "offered_load_from_file_name" in {x.code for x in ds.provenance.findings}


def test_other_json_is_not_llm_load_test(tmp_path):
    p = tmp_path / "x.json"
    p.write_text(json.dumps({"results": [{"a": 1}], "config": {}, "summary": {}}))
    with pytest.raises(FormatDetectionError):
        detect(p)


def _old_doc(concurrency: int, n: int, seed: int) -> dict:
    """The late-2023 layout: results (start/end epoch s, TT_ack/TTFT/TPOT ms, response_time s) and config."""
    rng = random.Random(seed)
    results = []
    for i in range(n):
        start = 1_703_281_620.0 + i * 1.3
        out = rng.randint(2, 400)
        ttft = rng.uniform(50, 500)
        end = start + ttft / 1000 + out * 0.027
        results.append({"start": start, "end": end, "TT_ack": 12.5, "TTFT": ttft, "TPOT": 27.3,
                        "response_time": end - start, "output_tokens": out, "worker_id": i % concurrency,
                        "input_tokens": rng.randint(50, 900), "response_string": "y", "input_string": "x"})
    return {"results": results, "config": {"output": {"format": "json", "dir": "./output/", "file": "output.json"},
                                           "load_options": {"type": "constant", "concurrency": concurrency,
                                                            "duration": 40}, "extra_metadata": {"replicas": 1}}}


def test_the_2023_layout(tmp_path):
    d = _old_doc(20, 15, 5)
    p = tmp_path / "output.json"
    p.write_text(json.dumps(d))
    assert detect(p).name == "llm-load-test"
    ds = load(p)
    f = ds.frame.sort("source_row")
    assert f["offered_load"].unique().to_list() == [20.0]
    for row, r in zip(f.iter_rows(named=True), d["results"], strict=True):
        assert row["start_s"] == pytest.approx(r["start"]) and row["end_s"] == pytest.approx(r["end"])
        assert row["latency_ms"] == pytest.approx(1000 * r["response_time"])  # seconds in this layout
        assert row["ttft_ms"] == pytest.approx(r["TTFT"])
        assert row["tpot_ms"] == pytest.approx((1000 * r["response_time"] - r["TTFT"]) / (r["output_tokens"] - 1))
        assert row["status"] == "ok"
    codes = {x.code for x in ds.provenance.findings}
    assert "no_error_field" in codes and ds.provenance.fields["tpot_ms"] == "derived"
    # a response_time in ms (not this layout's seconds) is refused rather than read 1000x off
    d["results"][3]["response_time"] *= 1000
    p.write_text(json.dumps(d))
    with pytest.raises(BadValueError, match=r"results\[3\].response_time"):
        load(p)
