"""The plan wing's shape: no module of plan/ imports a higher wing (ops, report, cli), and the
imports inside plan/ form no cycle (function-local imports included), read from the source."""

from __future__ import annotations

import ast
from pathlib import Path

PLAN = Path(__file__).resolve().parents[2] / "bearing_lib" / "plan"
HIGHER = ("bearing_lib.ops", "bearing_lib.report", "bearing_lib.cli")


def _imports() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for f in sorted(PLAN.glob("*.py")):
        names = set()
        for n in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(n, ast.ImportFrom) and n.module:
                names.add(n.module)
            elif isinstance(n, ast.Import):
                names.update(a.name for a in n.names)
        out[f.stem] = names
    return out


def test_plan_imports_no_higher_wing():
    bad = {m: sorted(n for n in names if n.startswith(HIGHER)) for m, names in _imports().items()}
    assert {m: v for m, v in bad.items() if v} == {}


def test_no_import_cycle_inside_plan():
    graph = {m: {n.rsplit(".", 1)[-1] for n in names if n.startswith("bearing_lib.plan.")}
             for m, names in _imports().items()}
    done: set[str] = set()

    def visit(m: str, path: tuple[str, ...]) -> None:
        assert m not in path, f"import cycle: {' -> '.join((*path, m))}"
        if m in done:
            return
        for n in graph.get(m, ()):
            visit(n, (*path, m))
        done.add(m)

    for m in graph:
        visit(m, ())


def test_options_object_and_keywords_give_the_same_plan():
    import json

    import pytest

    from bearing_lib.common.errors import ParameterError
    from bearing_lib.plan.capacity_plan import CapacityPlan, PlanOptions

    fixtures = PLAN.parents[1] / "tests" / "fixtures" / "plan"
    limits = json.loads((fixtures / "limits_handmade.json").read_text())
    profile = json.loads((fixtures / "profile_handmade.json").read_text())
    by_object = CapacityPlan.build(limits, profile, PlanOptions(tier="critical", growth=1.5))
    by_keyword = CapacityPlan.build(limits, profile, tier="critical", growth=1.5)
    assert by_object == by_keyword and by_object.tier.name == "critical"
    # a keyword replaces the option object's value
    assert CapacityPlan.build(limits, profile, PlanOptions(tier="critical"), tier="non-core").tier.fos_min == 1.2
    with pytest.raises(ParameterError, match="unknown plan option"):
        CapacityPlan.build(limits, profile, tierr="critical")
    with pytest.raises(ParameterError, match="tested_instances must be >= 1"):
        PlanOptions(tested_instances=0)
