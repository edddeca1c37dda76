"""``bearing_lib.common.lazy.lazy_exports``: the PEP 562 front doors of ``compare/`` and ``fidelity/``."""

from __future__ import annotations

import subprocess
import sys
import types

import pytest

from bearing_lib.common.lazy import lazy_exports
from tests.conftest import ROOT


def test_a_name_is_imported_on_first_use_and_then_kept(monkeypatch):
    mod = types.ModuleType("bearing_demo_door")
    monkeypatch.setitem(sys.modules, mod.__name__, mod)
    mod.__getattr__, mod.__dir__ = lazy_exports(mod.__name__, {"dumps": "json", "sqrt": "math"})
    import json
    import math

    assert "dumps" not in vars(mod)
    assert mod.dumps is json.dumps and mod.sqrt is math.sqrt
    assert vars(mod)["dumps"] is json.dumps  # kept: the next access does not import again
    assert {"dumps", "sqrt"} <= set(dir(mod))
    with pytest.raises(AttributeError, match="module 'bearing_demo_door' has no attribute 'loads'"):
        mod.loads  # noqa: B018


@pytest.mark.parametrize(("door", "light", "heavy_name", "heavy_module"), [
    ("bearing_lib.fidelity", "Fidelity", "assess_fidelity", "bearing_lib.fidelity.assess"),
    ("bearing_lib.compare", "Comparison", "compare", "bearing_lib.compare.build"),
])
def test_the_front_doors_import_what_is_asked_and_no_more(door, light, heavy_name, heavy_module):
    """In a fresh interpreter: the result type comes without the module that computes, which comes when asked."""
    code = (f"import sys, importlib; m = importlib.import_module({door!r}); t = getattr(m, {light!r}); "
            f"print(t.__module__, {heavy_module!r} in sys.modules); f = getattr(m, {heavy_name!r}); "
            f"print(f.__module__, {heavy_module!r} in sys.modules); print(sorted(m.__all__) == m.__all__, "
            "set(m.__all__) <= set(dir(m)))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:3] == [f"{door}.result False", f"{heavy_module} True", "True True"]
