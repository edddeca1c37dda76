"""The front door: ``bearing_lib.__all__`` is sorted, complete, resolves, and stays cheap to import.

Modelled on httpx's ``tests/test_exported_members.py``: every public name of the package is
in ``__all__`` and every name in ``__all__`` resolves.
"""

from __future__ import annotations

import importlib.metadata
import inspect
import json
import re
import subprocess
import sys
import tomllib
from types import ModuleType

import pytest

import bearing_lib
from bearing_lib.common import errors
from tests.conftest import ROOT

HEAVY = ("polars", "numpy", "scipy", "pandas", "pyarrow", "statsmodels", "altair", "vl_convert", "papermill",
         "nbconvert", "jupyter_client", "jinja2", "typer", "rich", "pydantic", "yaml")


def _public_members() -> list[str]:
    for name in bearing_lib.__all__:  # resolve the lazy names first, then list what the module holds
        getattr(bearing_lib, name)
    return [
        name
        for name, value in vars(bearing_lib).items()
        if (not name.startswith("_") or name == "__version__") and not isinstance(value, ModuleType)
    ]


def test_all_is_sorted_and_unique() -> None:
    assert bearing_lib.__all__ == sorted(bearing_lib.__all__)
    assert len(set(bearing_lib.__all__)) == len(bearing_lib.__all__)


def test_every_name_in_all_resolves_to_its_defining_object() -> None:
    # where each name is importable from (its defining module, or the stage module that re-exports it)
    expected_home = {
        "load": "bearing_lib.loaders",
        "load_trace": "bearing_lib.loaders",
        "fit_limits": "bearing_lib.limits.fit",
        "LimitsResult": "bearing_lib.limits.fit",
        "MixLimit": "bearing_lib.limits.fit",
        "profile_traffic": "bearing_lib.traffic.profile",
        "TrafficProfile": "bearing_lib.traffic.profile",
        "CapacityPlan": "bearing_lib.plan.capacity_plan",
        "build_report": "bearing_lib.report.model",
        "render_html": "bearing_lib.report.render",
        "write_report": "bearing_lib.report.render",
        "RequestTrace": "bearing_lib.data.trace",
        "LoadPointTable": "bearing_lib.data.loadpoints",
        "Estimate": "bearing_lib.common.estimate",
    }
    for name, module in expected_home.items():
        assert getattr(bearing_lib, name) is getattr(importlib.import_module(module), name), name
    for name in bearing_lib.__all__:
        assert getattr(bearing_lib, name) is not None


def test_nothing_public_is_missing_from_all() -> None:
    assert sorted(_public_members()) == bearing_lib.__all__


def test_every_exception_class_is_exported() -> None:
    classes = {
        name for name, obj in vars(errors).items()
        if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == errors.__name__
    }
    assert classes, "no exception classes found in bearing_lib.common.errors"
    assert classes <= set(bearing_lib.__all__), f"not exported: {sorted(classes - set(bearing_lib.__all__))}"
    for name in classes:
        assert getattr(bearing_lib, name) is getattr(errors, name)
        assert issubclass(getattr(bearing_lib, name), bearing_lib.BearingError)


def test_unknown_attribute_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        bearing_lib.nope  # noqa: B018
    assert not hasattr(bearing_lib, "describe_everything")


def test_version_comes_from_the_package_metadata() -> None:
    meta = importlib.metadata.version("bearing")
    assert bearing_lib.__version__ == meta
    # the installed metadata is pyproject's version (the package is installed from this tree's pyproject)
    assert meta == tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    # not hard-coded in the package
    assert not re.search(r"__version__\s*=\s*['\"]", (ROOT / "bearing_lib" / "__init__.py").read_text())


def test_the_library_never_imports_version_from_its_front_door() -> None:
    pattern = re.compile(r"from\s+bearing_lib\s+import\s+[^\n]*__version__|bearing_lib\.__version__")
    offenders = [
        str(p.relative_to(ROOT))
        for p in [*(ROOT / "bearing_lib").rglob("*.py"), *(ROOT / "notebooks").glob("*.ipynb")]
        if pattern.search(p.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_import_bearing_lib_loads_nothing_heavy() -> None:
    code = (
        f"import json, sys; import bearing_lib; heavy = {HEAVY!r}; "
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in heavy or m.startswith('bearing_lib.'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert json.loads(out.stdout) == []
