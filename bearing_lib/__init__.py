"""bearing: the bearing capacity of AI inference services.

Data flows one way: load (``bearing_lib.loaders``) → canonical request trace
(``bearing_lib.data.trace``) or load-point table (``bearing_lib.data.loadpoints``) → curves,
profiles → limits and plan → report model → HTML.

The names below are the front door: the entry point of each stage, the result types they
return and every exception bearing raises. They are imported on first use (PEP 562), so
``import bearing_lib`` itself loads nothing heavy:

>>> import bearing_lib
>>> issubclass(bearing_lib.ParameterError, bearing_lib.BearingError)
True

Inside the package import from the defining module (``bearing_lib.common.version`` for
``__version__``), never from ``bearing_lib``.
"""

# No ``from __future__ import annotations`` and only private helper names here: every
# public name of this module is in ``__all__`` (tests/test_exported_members.py).
import importlib as _importlib
import typing as _typing

# public name -> module that defines it (imported on first access)
_EXPORTS: dict[str, str] = {
    # loaders
    "load": "bearing_lib.loaders",
    "load_trace": "bearing_lib.loaders",
    # stages
    "fit_limits": "bearing_lib.limits.fit",
    "profile_traffic": "bearing_lib.traffic.profile",
    "CapacityPlan": "bearing_lib.plan.capacity_plan",
    "build_report": "bearing_lib.report.model",
    "render_html": "bearing_lib.report.render",
    "write_report": "bearing_lib.report.render",
    # result types
    "Estimate": "bearing_lib.common.estimate",
    "LimitsResult": "bearing_lib.limits.result",
    "LoadPointTable": "bearing_lib.data.loadpoints",
    "MixLimit": "bearing_lib.limits.result",
    "RequestTrace": "bearing_lib.data.trace",
    "TrafficProfile": "bearing_lib.traffic.document",
    # errors: every class of bearing_lib.common.errors (tests/test_exported_members.py checks)
    "BadValueError": "bearing_lib.common.errors",
    "BearingError": "bearing_lib.common.errors",
    "FormatDetectionError": "bearing_lib.common.errors",
    "InputError": "bearing_lib.common.errors",
    "InsufficientDataError": "bearing_lib.common.errors",
    "ParameterError": "bearing_lib.common.errors",
    "SLAParseError": "bearing_lib.common.errors",
    "SchemaError": "bearing_lib.common.errors",
    "ShapeUnusable": "bearing_lib.common.errors",
    "StructureError": "bearing_lib.common.errors",
    "UnsupportedVersionError": "bearing_lib.common.errors",
    "KernelNotFound": "bearing_lib.common.errors",
    "NotebookInputError": "bearing_lib.common.errors",
    "NotebookTimeout": "bearing_lib.common.errors",
    "ReportError": "bearing_lib.common.errors",
    "ReportExists": "bearing_lib.common.errors",
    "ReportLocked": "bearing_lib.common.errors",
    "ReportsFolderError": "bearing_lib.common.errors",
    "RunFailed": "bearing_lib.common.errors",
    # metadata
    "__version__": "bearing_lib.common.version",
}

__all__ = [
    "BadValueError",
    "BearingError",
    "CapacityPlan",
    "Estimate",
    "FormatDetectionError",
    "InputError",
    "InsufficientDataError",
    "KernelNotFound",
    "LimitsResult",
    "LoadPointTable",
    "MixLimit",
    "NotebookInputError",
    "NotebookTimeout",
    "ParameterError",
    "ReportError",
    "ReportExists",
    "ReportLocked",
    "ReportsFolderError",
    "RequestTrace",
    "RunFailed",
    "SLAParseError",
    "SchemaError",
    "ShapeUnusable",
    "StructureError",
    "TrafficProfile",
    "UnsupportedVersionError",
    "__version__",
    "build_report",
    "fit_limits",
    "load",
    "load_trace",
    "profile_traffic",
    "render_html",
    "write_report",
]


# Hand-written rather than ``lazy_loader.attach`` (Scientific Python SPEC 1): the same
# name -> module table and module ``__getattr__``, in a few lines and without a dependency.
def __getattr__(name: str) -> _typing.Any:
    """Import an exported name on first access and cache it in the module's namespace."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'bearing_lib' has no attribute {name!r}")
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if _typing.TYPE_CHECKING:  # for type checkers and IDEs; never executed
    from bearing_lib.common.errors import (
        BadValueError,
        BearingError,
        FormatDetectionError,
        InputError,
        InsufficientDataError,
        ParameterError,
        SchemaError,
        SLAParseError,
        UnsupportedVersionError,
    )
    from bearing_lib.common.estimate import Estimate
    from bearing_lib.common.version import __version__
    from bearing_lib.data.loadpoints import LoadPointTable
    from bearing_lib.data.trace import RequestTrace
    from bearing_lib.limits.fit import LimitsResult, MixLimit, fit_limits
    from bearing_lib.loaders import load, load_trace
    from bearing_lib.plan.capacity_plan import CapacityPlan
    from bearing_lib.report.model import build_report
    from bearing_lib.report.render import render_html, write_report
    from bearing_lib.traffic.document import TrafficProfile
    from bearing_lib.traffic.profile import profile_traffic
