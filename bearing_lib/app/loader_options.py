"""How one input of a report is read: its format, its column mapping and its loader's options, as one value.

A notebook's parameters name them separately (``format``, ``mapping``, ``options`` for the load test;
``production_format``, ``production_mapping``, ``production_options`` for the production trace:
:data:`LOADTEST`, :data:`PRODUCTION`). :meth:`LoaderOptions.from_parameters` checks them once, where
they enter (the runner before any kernel starts, the notebook's load call), and names the parameter
that is wrong and what it should have been; inside the pipeline only the frozen
:class:`LoaderOptions` travels. Which options a format takes is checked by the loader registry
(``bearing_lib.loaders.registry.call_loader``), the values by the loader itself.

>>> how = LoaderOptions.from_parameters("", "", {"time_unit": "ms"}, names=PRODUCTION)
>>> how.format, dict(how.options), how.loader_kwargs()
(None, {'time_unit': 'ms'}, {'time_unit': 'ms'})
>>> LoaderOptions.from_parameters("", "", ["time_unit=ms"], names=PRODUCTION)
Traceback (most recent call last):
...
bearing_lib.common.errors.ParameterError: parameter 'production_options': expected a mapping of option: value, \
e.g. {"time_unit": "ms"} (-p production_options '{time_unit: ms}'), got a list: ['time_unit=ms']
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import NamedTuple

from bearing_lib.common.errors import ParameterError
from bearing_lib.report.paths import resolve


class ParameterNames(NamedTuple):
    """The names of the three notebook parameters that say how one input is read."""

    format: str
    mapping: str
    options: str


LOADTEST = ParameterNames("format", "mapping", "options")
"""The load test's parameters (``limits.ipynb``; ``bearing report --format/--mapping/--option``)."""
PRODUCTION = ParameterNames("production_format", "production_mapping", "production_options")
"""The production trace's parameters (``weekly_report.ipynb``; ``bearing weekly --production-*``)."""


def _frozen(options: Mapping[str, object]) -> Mapping[str, object]:
    return MappingProxyType(dict(options))


@dataclass(frozen=True)
class LoaderOptions:
    """How one input is read.

    ``format``: the registered format name, or None to detect it (a ``mapping`` without a format reads the
    file as ``generic``, as ``bearing limits --mapping`` does); ``mapping``: a column-mapping YAML file (it
    reaches the loader as its ``mapping`` option); ``options``: the loader's keyword options (read-only).
    """

    format: str | None = None
    mapping: Path | None = None
    options: Mapping[str, object] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", _frozen(self.options))

    @classmethod
    def from_parameters(cls, format: object = "", mapping: object = "", options: object = None, *,
                        names: ParameterNames = LOADTEST) -> LoaderOptions:
        """The notebook parameters ``names`` (their values ``format``, ``mapping``, ``options``) checked once.

        Empty text or None is "not given". A mapping path is read as :func:`~bearing_lib.report.paths.resolve`
        does (as given when it exists, else under the project root). Raises :class:`ParameterError` naming the
        parameter, what it expects and what it got: a format or mapping that is not text, options that are not
        a mapping of option names (Python identifiers) to values, or the mapping given both as its own
        parameter and inside the options.
        """
        fmt = _text(format, names.format, "a format name, e.g. vllm (empty: detected)")
        where = _text(mapping, names.mapping, "the path of a column-mapping YAML file")
        opts = _options(options, names.options)
        if where is not None and "mapping" in opts:
            raise ParameterError(f"the column mapping is given twice: as parameter {names.mapping!r} and as "
                                 f"'mapping' inside parameter {names.options!r}; give it once")
        path = resolve(where) if where is not None else None
        return cls(format=fmt or ("generic" if path is not None else None), mapping=path, options=opts)

    def loader_kwargs(self) -> dict[str, object]:
        """The keyword arguments of ``bearing_lib.loaders.load`` besides ``format``: the options, plus the
        mapping (as the loader's ``mapping`` option) when one is given."""
        out = dict(self.options)
        if self.mapping is not None:
            out["mapping"] = str(self.mapping)
        return out

    @property
    def given(self) -> bool:
        """Whether anything was said about how to read the input (a format, a mapping or an option)."""
        return self.format is not None or self.mapping is not None or bool(self.options)


def _text(value: object, name: str, what: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, Path):
        value = str(value)
    if not isinstance(value, str):
        raise ParameterError(f"parameter {name!r}: expected {what}, got {_kind(value)}: {value!r:.60}")
    return value.strip() or None


def _options(value: object, name: str) -> dict[str, object]:
    if value is None or value == "":
        return {}
    if not isinstance(value, Mapping):
        raise ParameterError(f"parameter {name!r}: expected a mapping of option: value, e.g. {{\"time_unit\": "
                             f"\"ms\"}} (-p {name} '{{time_unit: ms}}'), got {_kind(value)}: {value!r:.60}")
    out: dict[str, object] = {}
    for key, v in value.items():
        if not isinstance(key, str) or not key.isidentifier():
            raise ParameterError(f"parameter {name!r}: option name {key!r} is not an option name (letters, digits, "
                                 "underscores, not starting with a digit)")
        out[key] = v
    return out


def _kind(value: object) -> str:
    names = {str: "text", int: "a number", float: "a number", bool: "true/false", list: "a list", tuple: "a list"}
    return names.get(type(value), type(value).__name__)


__all__ = ["LOADTEST", "PRODUCTION", "LoaderOptions", "ParameterNames"]
