"""The digital twin: a server model calibrated on a load test, validated on it, and replayed to predict limits.

>>> from bearing_lib.twin import calibrate, validate, predict   # doctest: +SKIP

* :func:`calibrate` (``calibrate.py``): the model's parameters with CIs and what identified them;
* :func:`validate` (``validate.py``): replay and leave-highest-steps-out checks; untrusted twins say so;
* :func:`predict` (``predict.py``): the SLA limit of a mix (production, user-given, scaled prompts,
  N instances, another SLA), an ``Estimate`` with basis ``offered`` and ``kind: "predicted"``;
* :func:`passive_limit` (``passive.py``): the latency-vs-load relation of production telemetry;
* :func:`twin_section` (``section.py``): what a report section needs (estimate, table, chart).

docs/twin.md describes the model, the calibration, the checks and where the twin is wrong.
"""

from __future__ import annotations

import json
from pathlib import Path

from bearing_lib.twin.calibrate import calibrate
from bearing_lib.twin.mix import RequestMix, from_trace, load_mix_file
from bearing_lib.twin.predict import SearchOptions, calibration_mix, predict
from bearing_lib.twin.result import Prediction, PredictionSet, StepCheck, Twin, TwinParam, Validation
from bearing_lib.twin.validate import validate


def load_tests(paths, *, format: str | None = None):
    """One :class:`RequestTrace` from one or more per-request load-test files (frames concatenated)."""
    import polars as pl

    from bearing_lib.common.errors import ParameterError
    from bearing_lib.loaders import load_trace

    traces = [load_trace(p, format=format) if format else load_trace(p) for p in paths]
    if not traces:
        raise ParameterError("no load test given")
    if len(traces) == 1:
        return traces[0]
    from bearing_lib.data.trace import RequestTrace

    return RequestTrace(frame=pl.concat([t.frame for t in traces], how="diagonal_relaxed"),
                        provenance=traces[0].provenance)


def fit_twin(paths, sla, *, n_boot: int = 200, seed: int = 0, format: str | None = None,
             known: dict | None = None, replicas: int = 1, router_known: bool = True, progress=None) -> Twin:
    """Load, calibrate and validate: the twin ``bearing twin fit`` writes (``known``: engine settings given;
    ``replicas``: the test's replicas, behind a round-robin router when ``router_known``, else only stated:
    :func:`bearing_lib.twin.deployment.fit_deployment` chooses)."""
    from bearing_lib.twin.deployment import fit_deployment

    trace = load_tests([Path(p) for p in paths], format=format)
    return fit_deployment(trace, sla, replicas=replicas, router_known=router_known, n_boot=n_boot, seed=seed,
                          known=known, progress=progress)


def read_twin(path: str | Path) -> Twin:
    """A twin JSON written by ``bearing twin fit`` (errors name the file)."""
    from bearing_lib.common.errors import InputError

    p = Path(path)
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"cannot read the twin ({exc.strerror})", path=p) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"not JSON ({exc.msg} at line {exc.lineno})", path=p) from None
    if not isinstance(doc, dict):
        raise InputError("expected a twin object (from `bearing twin fit`)", path=p)
    try:
        return Twin.from_dict(doc)
    except Exception as exc:
        from bearing_lib.common.errors import SchemaError

        if isinstance(exc, SchemaError):
            raise InputError(str(exc), path=p) from None
        raise


def predict_twin(twin: Twin | str | Path, sla, *, production=None, mixes=None, instances: int | None = None,
                 prompt_scale: float = 1.0, n_draws: int | None = None, seed: int = 0,
                 format: str | None = None, request_timeout: float | str | None = "keep",
                 dispatch: str | None = None, progress=None) -> PredictionSet:
    """``bearing twin predict``: predictions for a production trace's mix, a mix file's mixes, or the tested mix
    (``progress``: a terminal bar, :class:`bearing_lib.common.progress.Progress`, or None)."""
    tw = twin if isinstance(twin, Twin) else read_twin(twin)
    if production is not None:
        from bearing_lib.loaders import load_trace

        targets = [from_trace(load_trace(production, format=format) if format else load_trace(production))]
    elif mixes is not None:
        targets = load_mix_file(mixes)
    else:
        targets = [calibration_mix(tw)]
    from bearing_lib.twin.predict import DEFAULT_DRAWS

    opt = SearchOptions(n_draws=DEFAULT_DRAWS if n_draws is None else n_draws, seed=seed)
    preds = []
    for i, m in enumerate(targets):
        if progress is not None and len(targets) > 1:
            progress.label = f"mix {m.name} ({i + 1} of {len(targets)})"
        preds.append(predict(tw, m, sla, instances=instances, prompt_scale=prompt_scale, options=opt,
                             request_timeout=request_timeout, dispatch=dispatch, progress=progress))
    reasons = tw.validation.reasons if tw.validation is not None else ["not validated"]
    return PredictionSet(twin_source=tw.source, twin_trusted=tw.trusted, twin_reasons=reasons, predictions=preds)


def __getattr__(name: str):  # the optional pieces, imported when asked for
    if name == "passive_limit":
        from bearing_lib.twin.passive import passive_limit

        return passive_limit
    if name in ("twin_section", "TwinSection"):
        from bearing_lib.twin import section

        return getattr(section, name)
    raise AttributeError(name)


__all__ = [
    "Prediction",
    "PredictionSet",
    "RequestMix",
    "SearchOptions",
    "StepCheck",
    "Twin",
    "TwinParam",
    "Validation",
    "calibrate",
    "calibration_mix",
    "fit_twin",
    "from_trace",
    "load_mix_file",
    "load_tests",
    "predict",
    "predict_twin",
    "read_twin",
    "validate",
]
