"""The Pareto chart of a comparison (altair, Vega-Lite; data inline, so it renders offline).

x: output tokens/s per user (per request), y: output tokens/s per GPU; one colour per
deployment; every load step a point (filled when it met the SLA, hollow otherwise); the front
of SLA-feasible steps a line; each deployment's limit a diamond with its 95 % interval as a
vertical bar (per-GPU throughput at the limit's interval ends).
"""

from __future__ import annotations

from typing import Any

from bearing_lib.compare.result import Comparison


def chart_rows(c: Comparison) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(step rows, limit rows) as plain records: what the chart draws."""
    steps = [{"deployment": s.deployment, "per_user_tps": s.per_user_tps, "per_gpu_tps": s.per_gpu_tps,
              "offered_load": s.offered_load, "status": s.status, "meets_sla": s.feasible, "on_front": s.on_front}
             for d in c.deployments for s in d.steps if s.per_user_tps is not None and s.per_gpu_tps is not None]
    limits = []
    for d in c.deployments:
        g = d.per_gpu_tps
        if g is not None and g.available and d.per_user_tps is not None:
            limits.append({"deployment": d.name, "per_user_tps": d.per_user_tps, "per_gpu_tps": g.value,
                           "lo": g.lo if g.lo is not None else g.value, "hi": g.hi if g.hi is not None else g.value,
                           "limit": g.text(3)})
    return steps, limits


def pareto_chart(c: Comparison) -> Any:
    """An ``altair.LayerChart``: steps, the SLA-feasible front and each limit with its interval."""
    import altair as alt

    steps, limits = chart_rows(c)
    x = alt.X("per_user_tps:Q", title="output tokens/s per user (1000 / median TPOT)")
    y = alt.Y("per_gpu_tps:Q", title="output tokens/s per GPU")
    colour = alt.Color("deployment:N", title="deployment")
    base = alt.Chart(alt.Data(values=steps))
    points = base.mark_point(size=60).encode(
        x=x, y=y, color=colour,
        fill=alt.condition("datum.meets_sla", alt.Fill("deployment:N", legend=None), alt.value("transparent")),
        tooltip=["deployment:N", "offered_load:Q", "status:N", "per_user_tps:Q", "per_gpu_tps:Q"])
    front = base.transform_filter("datum.on_front").mark_line(color="black", strokeDash=[4, 2]).encode(
        x=x, y=y, order="per_user_tps:Q")
    lim = alt.Chart(alt.Data(values=limits))
    bars = lim.mark_rule(strokeWidth=2).encode(x="per_user_tps:Q", y="lo:Q", y2="hi:Q", color=colour)
    diamonds = lim.mark_point(shape="diamond", size=160, filled=True).encode(
        x="per_user_tps:Q", y="per_gpu_tps:Q", color=colour, tooltip=["deployment:N", "limit:N"])
    title = alt.TitleParams("Throughput per GPU vs per user under the SLA", subtitle=[
        "filled: step met the SLA; hollow: it did not; dashed: Pareto front of SLA-feasible steps",
        "diamond: the limit, bar: its 95% interval (per-GPU throughput at the interval's ends)"])
    return alt.layer(points, front, bars, diamonds).properties(width=640, height=400, title=title)


__all__ = ["chart_rows", "pareto_chart"]
