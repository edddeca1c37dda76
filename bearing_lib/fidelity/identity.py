"""Model (and endpoint) the test and production name.

A name is compared after lower-casing and dropping an organisation prefix (``meta-llama/``)
and surrounding space; a side that names none is *unknown*, never "the same". Several names on
one side (a production trace serving two models) are compared as sets. The canonical trace has
no endpoint column, so an endpoint is compared only where a loader kept one in its options
(``endpoint`` or ``url``) on both sides.
"""

from __future__ import annotations

from collections.abc import Iterable

from bearing_lib.fidelity.result import Dimension, Endpoint, Names
from bearing_lib.fidelity.result import missing_sides as _missing
from bearing_lib.fidelity.thresholds import MODEL_RULE

MAX_NAMES = 5


def normalise(name: str) -> str:
    n = name.strip().lower()
    return n.rsplit("/", 1)[-1] if "/" in n else n


def _names(values: Iterable[object]) -> list[str]:
    out = sorted({str(v).strip() for v in values if v is not None and str(v).strip()})
    return out


def model_dimension(test_models: Iterable[object], production_models: Iterable[object]) -> Dimension:
    t, p = _names(test_models), _names(production_models)
    label = "model"
    if not t or not p:
        missing = _missing(not t, not p, "model name")
        return Dimension("model", label, "unknown", missing, MODEL_RULE,
                         test=Names(t[:MAX_NAMES]) if t else None,
                         production=Names(p[:MAX_NAMES]) if p else None)
    tn, pn = {normalise(x) for x in t}, {normalise(x) for x in p}
    same = pn <= tn
    verdict = "represents" if same else "differs"
    statement = (f"the test ran {', '.join(t[:MAX_NAMES])}; production serves {', '.join(p[:MAX_NAMES])}"
                 + ("" if same else ": the limit is for another model"))
    return Dimension("model", label, verdict, statement, MODEL_RULE, test=Names(t[:MAX_NAMES]),
                     production=Names(p[:MAX_NAMES]))


def endpoint_dimension(test_endpoint: str | None, production_endpoint: str | None) -> Dimension | None:
    """The endpoint, only when both sides name one (None otherwise: nothing to show)."""
    if not test_endpoint or not production_endpoint:
        return None
    same = test_endpoint.strip().rstrip("/") == production_endpoint.strip().rstrip("/")
    return Dimension("endpoint", "endpoint", "represents" if same else "differs",
                     f"the test called {test_endpoint}; production is served at {production_endpoint}",
                     "differs when the endpoints differ", test=Endpoint(test_endpoint),
                     production=Endpoint(production_endpoint))


__all__ = ["endpoint_dimension", "model_dimension", "normalise"]
