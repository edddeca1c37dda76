"""The report's "Fidelity of the test to production" section.

:func:`fidelity_section` loads the load test the limits were fitted on (the limits' own
``conditions.sources``, as the twin does), takes production as the report loaded it and the
target load from the production profile, and returns the :class:`~bearing_lib.report.model.Section`
the report model carries as ``fidelity``: a :class:`~bearing_lib.fidelity.Fidelity` (one row per
dimension with the test's and production's values, the distance and the verdict), or why none can
be given. The template is ``templates/fidelity_section.html.j2``; the headline sentence when the test
does not represent production is ``Fidelity.headline``.
"""

from __future__ import annotations

from typing import Any

from bearing_lib.common.errors import BearingError
from bearing_lib.common.unavailable import Unavailable
from bearing_lib.fidelity.result import Fidelity
from bearing_lib.report.model import Section
from bearing_lib.report.paths import portable_path, resolve


def _peak(traffic: Any) -> tuple[float | None, str]:
    """Production's peak: the profile's target load (a ``TrafficProfile``'s ``targets.target``), with its
    statement."""
    from bearing_lib.traffic.document import TrafficProfile

    targets = traffic.targets if isinstance(traffic, TrafficProfile) else None
    target = targets.target if targets is not None else None
    if target is None or target.rps is None:
        return None, ""
    return float(target.rps), f"the target load: {target.statement}"


def load_test_of(limits: Any) -> tuple[Any, str] | Unavailable:
    """The load test the limits came from (loaded again from ``conditions.sources``), and its path."""
    from bearing_lib.loaders import load

    sources = list(limits.conditions.sources)
    if not sources:
        return Unavailable("the limits name no load-test source")
    if len(sources) > 1:
        paths = {s.path for s in sources}
        if len(paths) > 1:
            return Unavailable(f"the limits came from {len(paths)} load-test sources; fidelity compares one "
                               "(run the report on one of them)")
    src = sources[0]
    path = resolve(src.path)
    if not path.exists():
        return Unavailable(f"the load test the limits came from is not here ({src.path})")
    return load(path, format=src.format or None), str(src.path)


def fidelity_section(*, limits_doc: Any, production: Any, traffic: Any, run: str = "",
                     production_source: str = "", output_dir: str = "") -> Section[Fidelity]:
    """The section (module docstring); never raises on bad data: a reason instead. The load test's path is
    written for a reader (:func:`~bearing_lib.report.paths.portable_path`, relative to ``output_dir``, the
    project root or the working directory)."""
    if production is None or isinstance(production, Unavailable):
        return Section(False, "no production traffic: the test cannot be held against it")
    try:
        from bearing_lib.limits.result import LimitsResult

        limits = LimitsResult.coerce(limits_doc, source="limits JSON")
    except BearingError as exc:
        return Section(False, f"the limits cannot be read: {exc}")
    if limits is None:
        why = getattr(limits_doc, "reason", None) or (limits_doc.get("reason") if isinstance(limits_doc, dict)
                                                       else None)
        return Section(False, f"no limits: {why or 'not given'}")
    try:
        got = load_test_of(limits)
        if isinstance(got, Unavailable):
            return Section(False, got.reason)
        test, test_path = got
        from bearing_lib.fidelity.assess import assess_fidelity

        peak, basis = _peak(traffic)
        runs = limits.runs
        fid = assess_fidelity(test, production, limits=limits, run=run or (runs[0] if len(runs) == 1 else None),
                              peak_rps=peak, peak_basis=basis, test_source=portable_path(test_path, output_dir)[0],
                              production_source=production_source)
    except (BearingError, OSError) as exc:  # a load test moved, unreadable or refused by its loader: said, not raised
        return Section(False, f"the fidelity of the test could not be assessed: {exc}")
    return Section(True, data=fid)


__all__ = ["fidelity_section", "load_test_of"]
