"""The Jinja environment of the report's templates: autoescape on for every template, URLs defanged in
every string (:func:`bearing_lib.report.defang.defang`), load-step flags and plan variables in words
(:func:`bearing_lib.report.wording.plain`), numbers formatted for people.

Below :mod:`~bearing_lib.report.model` and :mod:`~bearing_lib.report.render` (it imports neither), so
the model can show itself in a notebook (``_repr_html_``) and the reports index (``bearing_lib.app.index``)
can render without the charts.
"""

from __future__ import annotations

import functools
import json
import math
from typing import Any

import jinja2
from markupsafe import Markup, escape

from bearing_lib.common.files import jsonable
from bearing_lib.report.defang import defang, defang_tree
from bearing_lib.report.flag_digest import digest
from bearing_lib.report.wording import plain, words

NOT_GIVEN_WHEN_ZERO = frozenset({"gpu_mem_gib", "concurrency", "price_per_hour", "budget_per_month", "zones",
                                 "replicas_per_node", "tested_instances"})
"""Report parameters whose 0 means "not given" (the notebooks' parameter cells say so)."""


def _finalize(value: Any) -> Any:
    """Every string printed: URLs defanged, internal step-flag and variable names in words (:func:`plain`)."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return plain(defang(value))
    return value


def _num(value: Any, digits: int = 2) -> str:
    """Numbers for people: thousands separators, ``digits`` decimals below 100, ``—`` for none."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if not math.isfinite(value):
            return "∞" if value > 0 else "not a number"
        if abs(value) >= 100:
            return f"{value:,.0f}"
        if value != 0 and abs(value) < 0.01:
            return f"{value:.2g}"
        return f"{value:,.{digits}f}"
    return str(value)


def _pct(value: Any) -> str:
    return "—" if value is None else f"{float(value):.1%}"


def _label(key: Any) -> str:
    return str(key).replace("_", " ")


def _not_given(key: Any, value: Any) -> bool:
    """True when a report parameter's value means "not given": an empty string, or 0 for the parameters of
    :data:`NOT_GIVEN_WHEN_ZERO` (shown as "not given", never as ``gpu_mem_gib 0.0``)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return True
    if isinstance(value, dict | list | tuple) and not value:  # an empty option set: nothing given (round 22)
        return True
    return (str(key) in NOT_GIVEN_WHEN_ZERO and isinstance(value, int | float) and not isinstance(value, bool)
            and value == 0)


def _tojson(value: Any) -> Markup:
    """JSON for a ``<script>``: URL-free and with ``<``, ``>``, ``&``, ``'`` as \\u escapes."""
    text = json.dumps(defang_tree(value), ensure_ascii=False, allow_nan=False)
    text = (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("'", "\\u0027").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))
    return Markup(text)


def _rawjson(value: Any) -> Markup:
    """Indented JSON as escaped text with URLs defanged; its keys stay as they are (it is the raw form)."""
    return escape(json.dumps(defang_tree(jsonable(value)), indent=1, ensure_ascii=False, allow_nan=False))


@functools.lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """The Jinja environment: package templates, autoescape on for every template."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("bearing_lib.report", "templates"),
        autoescape=True,  # every template, whatever its extension
        finalize=_finalize,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["num"] = _num
    env.filters["pct"] = _pct
    env.filters["label"] = _label
    env.filters["tojson"] = _tojson
    env.filters["defang"] = defang
    env.filters["rawjson"] = _rawjson
    env.filters["words"] = words
    env.filters["plain"] = plain
    env.filters["digest"] = digest
    env.filters["not_given"] = _not_given
    return env


def summary_block_html(model: Any) -> str:
    """A short HTML block (verdict + headline) of a :class:`~bearing_lib.report.model.ReportModel`."""
    return environment().get_template("summary_block.html.j2").render(model=model)


__all__ = ["NOT_GIVEN_WHEN_ZERO", "environment", "summary_block_html"]
