"""What a report section "Predicted for the production mix" needs, from a twin and a prediction.

:func:`twin_section` returns a :class:`TwinSection`: the headline (a predicted
:class:`~bearing_lib.common.estimate.Estimate`, labelled **predicted**, or the reason it is not
quoted), the validation table rows, the parameter table and an Altair chart of the twin's
replay against the measured steps. The report's model and views render it; nothing here
touches them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bearing_lib.common.estimate import Estimate
from bearing_lib.twin.result import Prediction, Twin

METRIC_LABEL = {"ttft_p99_ms": "P99 TTFT (ms)", "latency_p99_ms": "P99 latency (ms)",
                "ttft_p95_ms": "P95 TTFT (ms)", "latency_p95_ms": "P95 latency (ms)"}


@dataclass
class TwinSection:
    """A report section: headline, predicted estimate, tables and chart (Vega-Lite spec without URLs)."""

    title: str
    headline: str
    predicted: Estimate | None
    kind: str
    trusted: bool
    flags: list[str]
    validation_rows: list[dict[str, object]]
    param_rows: list[dict[str, object]]
    chart: Any  # altair.Chart
    notes: list[str] = field(default_factory=list)

    def chart_spec(self) -> dict[str, Any]:
        """The chart as a Vega-Lite dict with no ``$schema`` URL (the report opens offline)."""
        spec = self.chart.to_dict()
        spec.pop("$schema", None)
        return spec


def _metric_key(twin: Twin) -> str:
    """The replay figure the chart shows: the SLA's own percentile (P95 or P99) of its first TTFT or latency
    clause; P99 otherwise."""
    v = twin.validation
    if v is None:
        return "latency_p99_ms"
    try:
        from bearing_lib.limits.sla import parse_sla

        for c in parse_sla(v.sla).percentile_clauses():
            base = {"ttft_ms": "ttft", "latency_ms": "latency"}.get(c.metric)
            if base is not None:
                key = f"{base}_p{round(c.q * 100)}_ms"
                return key if key in METRIC_LABEL else f"{base}_p99_ms"
    except Exception:  # noqa: BLE001  # the chart falls back to P99
        pass
    return "ttft_p99_ms" if "ttft" in v.sla else "latency_p99_ms"


def _chart(twin: Twin, key: str, threshold_ms: float | None):
    import altair as alt

    rows = []
    for r in twin.validation.rows if twin.validation else []:
        if r.offered_load is None:
            continue
        if not r.held_out:
            rows.append({"offered_load": r.offered_load, "value": r.measured.get(key), "series": "measured"})
        rows.append({"offered_load": r.offered_load, "value": r.predicted.get(key),
                     "series": "twin, step held out" if r.held_out else "twin replay"})
    rows = [r for r in rows if r["value"] is not None and r["value"] > 0]
    base = alt.Chart(alt.Data(values=rows)).encode(
        x=alt.X("offered_load:Q", title="offered load (rps)"),
        y=alt.Y("value:Q", title=METRIC_LABEL.get(key, key), scale=alt.Scale(type="log")),
        color=alt.Color("series:N", title=None),
    )
    chart = base.mark_line(point=True).transform_filter("datum.series != 'twin, step held out'") + \
        base.mark_point(size=90, shape="diamond", filled=True).transform_filter("datum.series == 'twin, step held out'")
    if threshold_ms:
        rule = alt.Chart(alt.Data(values=[{"t": threshold_ms}])).mark_rule(strokeDash=[4, 4], color="#c62828") \
            .encode(y="t:Q")
        chart = chart + rule
    return chart.properties(title={"text": "Twin replay vs measured, per step",
                                   "subtitle": f"{len(rows)} points; dashed: the SLA threshold"}, width=520, height=280)


def twin_section(twin: Twin, prediction: Prediction, *, measured: Estimate | dict | None = None) -> TwinSection:
    """The section "Predicted for the production mix" (``measured``: the tested mix's measured q_ult, if any)."""
    key = _metric_key(twin)
    threshold = None
    try:
        from bearing_lib.limits.sla import parse_sla

        want = "ttft_ms" if key.startswith("ttft") else "latency_ms"
        q = 0.95 if "_p95_" in key else 0.99
        for c in parse_sla(twin.validation.sla if twin.validation else prediction.sla).percentile_clauses():
            if c.metric == want and abs(c.q - q) < 1e-9:
                threshold = c.threshold
    except Exception:  # noqa: BLE001  # the chart only loses its threshold line
        threshold = None
    q = prediction.q_ult
    if prediction.trusted:
        headline = f"Predicted (not measured) limit for {prediction.target}: {q.text()}"
        predicted: Estimate | None = q
    else:
        rs = twin.validation.reasons if twin.validation else ["not validated"]
        reasons = "; ".join(rs[:3]) + (f"; and {len(rs) - 3} more" if len(rs) > 3 else "")
        headline = f"No prediction quoted for {prediction.target}: the twin failed its own validation ({reasons})"
        predicted = None
    # how the tested replicas are modelled, when the router was unknown (bearing_lib.twin.deployment)
    notes = [n for n in twin.notes if n.startswith("the test ran against")]
    if measured is not None:
        m = measured if isinstance(measured, Estimate) else Estimate.from_censored(
            measured.get("value"), str(measured.get("censored") or "none"),  # type: ignore[arg-type]
            ci95=tuple(measured.get("ci95") or (None, None)), unit=str(measured.get("unit") or "rps"),  # type: ignore[arg-type]
            basis="offered")
        notes.append(f"measured limit of the tested mix (bearing limits): {m.text()}")
    vrows = twin.validation.table() if twin.validation else []
    prows = [{"parameter": p.name, "value": p.value, "ci95": list(p.ci95), "unit": p.unit,
              "identified": p.identified, "steps": p.steps, "note": p.note} for p in twin.params]
    return TwinSection(
        title="Predicted for the production mix", headline=headline, predicted=predicted, kind="predicted",
        trusted=prediction.trusted, flags=list(prediction.flags), validation_rows=vrows, param_rows=prows,
        chart=_chart(twin, key, threshold), notes=notes,
    )





def production_section(loadtest, production, sla, *, run: str | None = None, n_draws: int | None = None,
                       seed: int = 0, replicas: int = 1, router_known: bool = True,
                       ) -> tuple[TwinSection, Twin, Prediction]:
    """One call for the report: calibrate on ``loadtest`` (one ``run`` of it, if named), validate, predict
    the ``production`` trace's mix, and build the section. Paths or loaded traces are accepted. ``replicas``
    and ``router_known``: as :func:`bearing_lib.twin.deployment.fit_deployment` takes them."""
    from bearing_lib.data.trace import RequestTrace
    from bearing_lib.loaders import load_trace
    from bearing_lib.twin.deployment import fit_deployment
    from bearing_lib.twin.mix import from_trace
    from bearing_lib.twin.predict import DEFAULT_DRAWS, SearchOptions, predict

    test = loadtest if isinstance(loadtest, RequestTrace) else load_trace(loadtest)
    if run is not None:
        part = test.frame.filter(test.frame["run_id"] == run)
        if part.height == 0:
            from bearing_lib.common.errors import ParameterError

            runs = sorted(set(test.frame["run_id"].to_list()))
            raise ParameterError(f"run {run!r} is not in the load test (runs: {', '.join(runs)})")
        test = RequestTrace(frame=part, provenance=test.provenance)
    prod = production if isinstance(production, RequestTrace) else load_trace(production)
    twin = fit_deployment(test, sla, replicas=replicas, router_known=router_known, seed=seed)
    mix = from_trace(prod)
    opt = SearchOptions(n_draws=DEFAULT_DRAWS if n_draws is None else n_draws, seed=seed)
    pred = predict(twin, mix, sla, options=opt)
    sec = twin_section(twin, pred)
    rto = twin.param("request_timeout_s") if any(p.name == "request_timeout_s" for p in twin.params) else None
    if rto is not None and rto.value is not None and pred.trusted:
        # the deadline in front of the engine is configuration the team can change: show what the engine
        # itself would carry without it, labelled as the what-if it is
        free = predict(twin, mix, sla, options=opt, request_timeout=None)
        a, b = pred.q_ult.value, free.q_ult.value
        why = ("the request timeout, not the engines' capacity, sets the limit above" if a is not None and
               b is not None and b > 1.05 * a else "the timeout does not move the limit much")
        sec.notes.append(f"what-if, predicted (not measured): without the test's {rto.value:.1f} s request timeout "
                         f"the limit for {free.target} would be {free.q_ult.text()}: {why}")
    return sec, twin, pred



def what_if(twin: Twin | str, trace, sla: str, *, instances: int | None = None, prompt_scale: float = 1.0,
            n_draws: int | None = None, seed: int = 0,
            request_timeout: float | str | None = "keep") -> Prediction | str:
    """The notebook's what-if: the limit ``twin`` (a Twin or a twin JSON path) predicts for ``trace``'s mix.

    ``request_timeout``: seconds, ``"none"``/``None`` (no deadline) or ``"keep"`` (the twin's own).

    With no twin given it returns a sentence saying how to give one (the notebook cell stays one call).
    """
    if not twin:
        return ("no twin given: fit one with `bearing twin fit LOADTEST --sla ... --json twin.json`, then pass "
                "-p twin twin.json -p twin_sla 'p99(ttft) <= 1s'")
    from bearing_lib.common.errors import ParameterError
    from bearing_lib.twin import read_twin
    from bearing_lib.twin.mix import from_trace
    from bearing_lib.twin.predict import DEFAULT_DRAWS, SearchOptions, predict

    if not sla:
        raise ParameterError("twin_sla is required with twin: the SLA the what-if holds, e.g. 'p99(ttft) <= 1s'")
    tw = twin if isinstance(twin, Twin) else read_twin(twin)
    from bearing_lib.twin.timeout import parse_request_timeout

    return predict(tw, from_trace(trace), sla, instances=instances, prompt_scale=prompt_scale,
                   options=SearchOptions(n_draws=DEFAULT_DRAWS if n_draws is None else n_draws, seed=seed),
                   request_timeout=parse_request_timeout(request_timeout, what="twin_request_timeout"))
__all__ = ["TwinSection", "production_section", "twin_section", "what_if"]
