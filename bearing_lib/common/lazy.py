"""A wing's front door that imports its names on first use (PEP 562 module ``__getattr__``).

A front door (``bearing_lib.compare``, ``bearing_lib.fidelity``) lists its public names and the
module defining each; :func:`lazy_exports` gives the module's ``__getattr__`` and ``__dir__``, so
``import bearing_lib.fidelity`` loads neither numpy nor scipy until ``assess_fidelity`` is asked
for (the report's ``summary.json`` reader needs the result types only). A resolved name is kept
in the module's namespace, so the import happens once.

>>> getattr_, dir_ = lazy_exports("demo", {"sqrt": "math"})
>>> getattr_("sqrt")(9.0)
3.0
>>> dir_()
['sqrt']
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, where: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for the module ``package``: each name of ``where`` is imported from the
    module ``where[name]`` when first asked for (and then kept in ``package``'s namespace, when that module
    is imported); any other name is an :class:`AttributeError` naming the module and the name."""
    names = dict(where)

    def __getattr__(name: str) -> Any:
        if name not in names:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(names[name]), name)
        module = sys.modules.get(package)
        if module is not None:
            setattr(module, name, value)
        return value

    def __dir__() -> list[str]:
        module = sys.modules.get(package)
        have = set(vars(module)) if module is not None else set()
        return sorted(have | set(names))

    return __getattr__, __dir__


__all__ = ["lazy_exports"]
