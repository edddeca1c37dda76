"""BurstGPT CSV loader.

SYNTHETIC FIXTURES: the real BurstGPT files could not be obtained (Git LFS / release
assets; see the traces README, "Looked for and could not get"). Every fixture below is a
small hand-made file written by the test in the documented layouts (v1: 6 columns; v3:
Session ID and Elapsed time inserted as columns 2-3). The values are invented; the
expected results are worked out by hand from them.
"""

from __future__ import annotations

import pytest

from bearing_lib import BadValueError, load_trace
from bearing_lib.loaders import detect

# SYNTHETIC: v1 layout (BurstGPT_1/_2), one failure (Response tokens 0)
V1 = (
    "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
    "5,ChatGPT,472,18,490,Conversation log\n"
    "45,ChatGPT,1087,230,1317,Conversation log\n"
    "118,GPT-4,417,0,417,API log\n"
)
# SYNTHETIC: v3 layout (BurstGPT_3), Session ID and Elapsed time as columns 2-3
V3 = (
    "Timestamp,Session ID,Elapsed time,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
    "19440110.0,1722ac82,43,GPT-4,906,446,1352,Conversation log\n"
    "19440161.0,d5983bf9,2,ChatGPT,36,29,65,Conversation log\n"
    "19440192.5,a5c69b35,8.5,GPT-4,1779,0,1779,API log\n"
)


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_burstgpt_v1_synthetic(tmp_path):
    p = _write(tmp_path, "BurstGPT_1.csv", V1)
    assert detect(p).name == "burstgpt"
    tr = load_trace(p)
    f = tr.frame
    assert tr.provenance.tool_version == "v1"
    assert f["start_s"].to_list() == [5.0, 45.0, 118.0]
    assert f["input_tokens"].to_list() == [472, 1087, 417]
    assert f["output_tokens"].to_list() == [18, 230, 0]
    assert f["status"].to_list() == ["ok", "ok", "error"]
    assert f["error"].null_count() == 2 and "zero response tokens" in f["error"][2]
    assert f["model"].to_list() == ["ChatGPT", "ChatGPT", "GPT-4"]
    assert f["latency_ms"].null_count() == 3  # v1 has no Elapsed time
    prov = tr.provenance
    assert prov.time_origin == "relative"
    assert "local time" in prov.timezone
    assert {x.code for x in prov.findings} >= {"relative_local_time", "failures"}
    assert next(x for x in prov.findings if x.code == "failures").count == 1
    assert prov.fields["status"] == "derived" and prov.fields["latency_ms"] == "absent"


def test_burstgpt_v3_synthetic_elapsed_time_is_latency(tmp_path):
    p = _write(tmp_path, "BurstGPT_3.csv", V3)
    tr = load_trace(p)
    f = tr.frame
    assert tr.provenance.tool_version == "v3"
    assert f["start_s"].to_list() == [19440110.0, 19440161.0, 19440192.5]
    assert f["latency_ms"].to_list() == [43_000.0, 2_000.0, 8_500.0]
    assert f["end_s"].to_list() == [19440153.0, 19440163.0, 19440201.0]
    assert f["input_tokens"].to_list() == [906, 36, 1779]
    assert f["status"].to_list() == ["ok", "ok", "error"]
    assert tr.provenance.fields["latency_ms"] == "measured"
    assert tr.provenance.fields["end_s"] == "derived"


def test_burstgpt_columns_are_read_by_name(tmp_path):
    # SYNTHETIC: the v3 columns in another order give the same trace
    lines = V3.strip().split("\n")
    order = [7, 6, 5, 4, 3, 2, 1, 0]
    shuffled = "\n".join(",".join(line.split(",")[i] for i in order) for line in lines) + "\n"
    a = load_trace(_write(tmp_path, "a.csv", V3)).frame.drop("source_row")
    b = load_trace(_write(tmp_path, "b.csv", shuffled)).frame.drop("source_row")
    assert a.equals(b)


def test_burstgpt_total_tokens_mismatch_is_reported(tmp_path):
    # SYNTHETIC: the second row's total is wrong (65 + 1 = 66 != 65... invented to test the check)
    text = V1.replace("1087,230,1317", "1087,230,1300")
    tr = load_trace(_write(tmp_path, "t.csv", text))
    mis = next(x for x in tr.provenance.findings if x.code == "total_tokens_mismatch")
    assert mis.count == 1


def test_burstgpt_non_numeric_tokens_name_the_row(tmp_path):
    # SYNTHETIC
    text = V1.replace("45,ChatGPT,1087", "45,ChatGPT,many")
    with pytest.raises(BadValueError, match=r"row 3, field 'Request tokens': expected a whole number, found 'many'"):
        load_trace(_write(tmp_path, "bad.csv", text))


def test_burstgpt_elapsed_time_with_unit_in_the_name(tmp_path):
    # SYNTHETIC: a copy whose header says "Elapsed time (s)"
    text = V3.replace("Elapsed time,", "Elapsed time (s),")
    tr = load_trace(_write(tmp_path, "t.csv", text))
    assert tr.provenance.tool_version == "v3"
    assert tr.frame["latency_ms"].to_list() == [43_000.0, 2_000.0, 8_500.0]
