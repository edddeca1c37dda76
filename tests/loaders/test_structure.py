"""CSV structure checks of ``read_csv_checked`` (the edge every CSV loader goes through).

Files are hand-written here; the expected lines and counts are read off the text.
"""

from __future__ import annotations

import gzip

import polars as pl
import pytest

from bearing_lib.common.errors import BadValueError, SchemaError, StructureError
from bearing_lib.loaders._common import read_csv_checked
from bearing_lib.loaders.source import InputSource

COLS = {"a": pl.Int64(), "b": pl.String(), "c": pl.String()}


def _read(tmp_path, body: bytes | str, name: str = "t.csv", **kw):
    p = tmp_path / name
    data = body.encode() if isinstance(body, str) else body
    p.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    return read_csv_checked(InputSource(p), kw.pop("columns", COLS), **kw)


def test_empty_last_fields_and_blank_lines_are_not_ragged(tmp_path):
    # "1,x," has three fields (the last empty); a blank line is no row of fields at all
    f = _read(tmp_path, "a,b,c\n1,x,\n2,y,z\n\n3,,\n")
    assert f["c"].to_list()[:2] == [None, "z"]
    assert f.height == 4  # polars keeps the blank line as a row of nulls; lines stay aligned


def test_short_rows_are_listed_with_their_lines(tmp_path):
    with pytest.raises(StructureError) as exc:
        _read(tmp_path, "a,b,c\n1,x,y\n2,y\n3,z,w\n4\n")
    assert [(p.row, p.message.split(":")[0]) for p in exc.value.problems] == [(3, "too few fields"),
                                                                              (5, "too few fields")]
    assert "found 2, expected 3" in str(exc.value) and "found 1, expected 3" in str(exc.value)


def test_long_row_is_located(tmp_path):
    with pytest.raises(StructureError) as exc:
        _read(tmp_path, "a,b,c\n1,x,y\n2,y,z,extra\n")
    assert exc.value.row == 3 and "too many fields: found 4, expected 3" in str(exc.value)


def test_quoted_separators_are_fields_not_extra_columns(tmp_path):
    f = _read(tmp_path, 'a,b,c\n1,"x, with comma",\n2,"y",z\n')
    assert f["b"].to_list() == ["x, with comma", "y"]
    with pytest.raises(StructureError) as exc:  # a quoted line that really is short
        _read(tmp_path, 'a,b,c\n1,"x, y"\n2,y,z\n')
    assert exc.value.row == 2 and "found 2" in str(exc.value)


@pytest.mark.parametrize("name, body", [
    ("crlf.csv", b"a,b,c\r\n1,x,y\r\n2,y\r\n"),
    ("bom.csv", b"\xef\xbb\xbfa,b,c\n1,x,y\n2,y\n"),
    ("g.csv.gz", b"a,b,c\n1,x,y\n2,y\n"),
])
def test_short_row_found_through_crlf_bom_and_gzip(tmp_path, name, body):
    with pytest.raises(StructureError) as exc:
        _read(tmp_path, body, name)
    assert exc.value.row == 3


def test_headerless_file_with_missing_fields(tmp_path):
    cols = {"x": pl.Int64(), "y": pl.Int64()}
    f = _read(tmp_path, "1,2\n3,4\n", columns=cols, has_header=False, new_columns=["x", "y"])
    assert f["y"].to_list() == [2, 4]
    with pytest.raises(StructureError) as exc:
        _read(tmp_path, "1,2\n3\n", columns=cols, has_header=False, new_columns=["x", "y"])
    assert exc.value.row == 2


def test_duplicate_column_names_are_refused_with_positions(tmp_path):
    with pytest.raises(SchemaError) as exc:
        _read(tmp_path, "a,b,a,c, b\n1,2,3,4,5\n")
    msgs = [p.message for p in exc.value.problems]
    assert msgs[0].startswith("column 'a' appears twice (columns 1 and 3)")
    assert msgs[1].startswith("column 'b' appears twice (columns 2 and 5)")  # names are stripped first


def test_nul_bytes_in_the_head_and_in_a_value(tmp_path):
    with pytest.raises(StructureError, match="NUL bytes") as exc:
        _read(tmp_path, b"a,b,c\n1,x\x00,y\n")
    assert exc.value.row == 2
    filler = "".join(f"{i},v{i},w\n" for i in range(8000))  # > 64 KiB: the NUL is past the head
    with pytest.raises(StructureError) as exc:
        _read(tmp_path, ("a,b,c\n" + filler).encode() + b"9,bad\x00value,w\n")
    assert (exc.value.row, exc.value.field) == (8002, "b")


def test_every_bad_column_at_once(tmp_path):
    cols = {"a": pl.Int64(), "b": pl.Float64(), "c": pl.String()}
    with pytest.raises(BadValueError) as exc:
        _read(tmp_path, "a,b,c\n1,2.5,x\nfive,2.5,x\n3,fast,x\n4,slow,x\n", columns=cols)
    got = [(p.row, p.field) for p in exc.value.problems]
    assert got == [(3, "a"), (4, "b")]
    assert "expected a number, found 'fast' (2 row(s) affected)" in str(exc.value)
