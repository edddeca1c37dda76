"""The plan's options: one object or keywords give the same plan. (The plan wing's imports, with every
other wing's, are checked by tests/test_layering.py.)"""

from __future__ import annotations

from pathlib import Path

PLAN = Path(__file__).resolve().parents[2] / "bearing_lib" / "plan"


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
