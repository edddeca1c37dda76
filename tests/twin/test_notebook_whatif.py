"""The what-if cell of notebooks/explore.ipynb: one call, a predicted limit for the explored trace's mix."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import papermill
import pytest

from bearing_lib.loaders.canonical import write_trace
from bearing_lib.twin import calibrate, validate
from tests.twin.conftest import oracle_trace

ROOT = Path(__file__).resolve().parents[2]


def test_explore_what_if_predicts_the_traces_mix(tmp_path):
    tr = oracle_trace("small", "rag")
    twin = calibrate(tr, n_boot=40)
    twin.validation = validate(twin, tr, "p99(ttft) <= 3s")
    twin_json = tmp_path / "twin.json"
    twin_json.write_text(json.dumps(twin.to_dict()))
    trace = write_trace(tr, tmp_path / "rag.parquet")
    out = tmp_path / "explore.ipynb"
    papermill.execute_notebook(str(ROOT / "notebooks" / "explore.ipynb"), str(out), progress_bar=False,
                               kernel_name="python3",
                               parameters={"trace": str(trace), "twin": str(twin_json), "twin_sla": "p99(ttft) <= 3s",
                                           "twin_instances": 2})
    nb = nbformat.read(out, as_version=4)
    last = nb.cells[-1]
    text = json.dumps([o.get("data", {}) for o in last.get("outputs", [])])
    assert "predicted limit for production mix" in text and "rag.parquet" in text
    # 2 instances of the oracle's small server carry 2 x 5.25 rps of RAG under this SLA (tests/oracle/truth.json)
    value = float(text.split("3s: ")[1].split(" rps")[0])
    assert value == pytest.approx(2 * 5.249, rel=0.10)
    assert not [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
