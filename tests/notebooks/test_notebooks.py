"""The notebooks in notebooks/: committed without outputs, a papermill parameters contract,
no logic (no def/class/loops), and they run under plain papermill on the bundled data.

The full report path (limits.ipynb on the LMBenchmark sweep, then weekly_report.ipynb on the
Azure conversation trace) runs in tests/report/test_demo.py.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import nbformat
import papermill
import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
PARAM_LINE = re.compile(r"^(?P<name>[a-z_][a-z0-9_]*): (?P<type>str|int|float|bool|list|dict) = (?P<value>[^#]+?)"
                        r"  # (?P<help>\S.*)$")
LOGIC = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.For, ast.AsyncFor, ast.While, ast.Lambda,
         ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def test_the_three_notebooks_exist():
    assert [p.name for p in NOTEBOOKS] == ["explore.ipynb", "limits.ipynb", "weekly_report.ipynb"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_without_outputs(path):
    raw = json.loads(path.read_text(encoding="utf-8"))
    for cell in raw["cells"]:
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None, cell["source"]
    assert raw["metadata"]["kernelspec"]["name"] == "python3"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_one_parameters_cell_with_typed_documented_entries(path):
    nb = nbformat.read(path, as_version=4)
    tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1
    lines = [ln for ln in tagged[0].source.splitlines() if ln.strip()]
    for ln in lines:
        m = PARAM_LINE.match(ln)
        assert m, f"{path.name}: parameter line not 'name: type = value  # help': {ln!r}"
        ast.literal_eval(m.group("value"))  # defaults are literals
    # and papermill documents exactly these (papermill --help-notebook reads the same)
    declared = papermill.inspect_notebook(str(path))
    assert list(declared) == [PARAM_LINE.match(ln).group("name") for ln in lines]
    assert all(d["help"] for d in declared.values())


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_logic_in_notebooks(path):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        tree = ast.parse(cell.source)
        bad = [type(n).__name__ for n in ast.walk(tree) if isinstance(n, LOGIC)]
        assert not bad, f"{path.name}: {bad} in cell {cell.source[:60]!r}; logic belongs in bearing_lib"
        assert "tqdm" not in cell.source and "progress" not in cell.source  # no widgets in notebooks


def test_explore_runs_under_plain_papermill_on_the_mooncake_trace(tmp_path):
    trace = ROOT / "data" / "traces" / "mooncake-fast25" / "conversation_trace.jsonl"
    n_lines = sum(1 for line in trace.read_text(encoding="utf-8").splitlines() if line.strip())
    out = tmp_path / "explore.ipynb"
    papermill.execute_notebook(str(ROOT / "notebooks" / "explore.ipynb"), str(out),
                               parameters={"trace": str(trace)}, progress_bar=False, kernel_name="python3")
    nb = nbformat.read(out, as_version=4)
    text = "\n".join(o.get("text", "") if o.get("output_type") == "stream" else
                     json.dumps(o.get("data", {})) for c in nb.cells for o in c.get("outputs", []))
    assert f"rows:     {n_lines:,}" in text
    assert "no load steps: this is not a load test" in text
    assert "mooncake" in text.lower()
    assert not [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
