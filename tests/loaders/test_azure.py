"""Azure LLM inference trace loader, on the bundled real files.

Expected values are computed independently in the test with the csv module and datetime
(not polars), and match the facts in the data folder's README (19,366 and 8,819 rows).
"""

from __future__ import annotations

import csv
from datetime import UTC, datetime

import pytest

from bearing_lib import load_trace

FILES = {
    "conv": "traces/azure-llm-inference-2023/AzureLLMInferenceTrace_conv.csv",
    "code": "traces/azure-llm-inference-2023/AzureLLMInferenceTrace_code.csv",
}


def _independent(path):
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    ts = [
        datetime.strptime(r["TIMESTAMP"][:26], "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=UTC).timestamp()
        + int(r["TIMESTAMP"][26:] or 0) * 1e-7
        for r in rows
    ]
    return rows, ts


@pytest.mark.parametrize("which,n,span_min", [("conv", 19_366, 58.4), ("code", 8_819, 57.3)])
def test_azure_real_file(bundled, which, n, span_min):
    path = bundled(FILES[which])
    before = path.read_bytes()
    tr = load_trace(path)
    rows, ts = _independent(path)
    assert len(tr) == len(rows) == n
    assert round((max(ts) - min(ts)) / 60, 1) == span_min
    f = tr.frame
    assert f["start_s"].to_list() == pytest.approx(ts, abs=1e-6)
    assert f["input_tokens"].sum() == sum(int(r["ContextTokens"]) for r in rows)
    assert f["output_tokens"].sum() == sum(int(r["GeneratedTokens"]) for r in rows)
    assert tr.provenance.format == "azure-llm-inference"
    assert tr.provenance.tool_version == "2023"
    assert "UTC" in tr.provenance.timezone and "assumed" in tr.provenance.timezone
    assert tr.provenance.fields["latency_ms"] == "absent"
    assert path.read_bytes() == before  # input never modified


def test_azure_2024_layout_with_offsets(tmp_path):
    p = tmp_path / "AzureLLMInferenceTrace_code_1week.csv"
    p.write_text(
        "TIMESTAMP,ContextTokens,GeneratedTokens\n"
        "2024-05-10 00:00:00.009930+00:00,100,10\n"
        "2024-05-10 00:00:01+00:00,200,20\n"
    )
    tr = load_trace(p)
    assert tr.provenance.tool_version == "2024"
    t0 = datetime(2024, 5, 10, tzinfo=UTC).timestamp()
    # float64 epoch seconds resolve ~2.4e-7 s
    assert tr.frame["start_s"].to_list() == pytest.approx([t0 + 0.00993, t0 + 1.0], abs=1e-6)
