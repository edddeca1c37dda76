"""The traffic profile in a few lines of text (what ``bearing profile`` prints): :func:`summary_lines`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bearing_lib.traffic.source import ProfileSource

if TYPE_CHECKING:  # pragma: no cover
    from bearing_lib.traffic.document import TrafficProfile


def _fmt(x: object) -> str:
    return "n/a" if x is None else f"{x:,.2f}"


def _missing(part: object) -> str:
    return f"not available: {getattr(part, 'reason', None) or 'not in the profile'}"


def summary_lines(p: TrafficProfile) -> list[str]:
    """A short human summary of ``p``, one ``name: text`` line per section the profile has."""
    src = p.source
    lines = [f"source:      {src.path} ({src.format})" if isinstance(src, ProfileSource) else f"source:      {src}"]
    lines.append(f"span:        {(p.span_s or 0.0) / 3600:,.2f} h, clock {'relative' if p.relative else 'UTC'}")
    lines.append(f"convention:  {p.convention}")
    pm = p.per_minute
    if pm is not None and pm.available:
        lines.append(
            f"per minute:  {pm.n_minutes} minutes ({pm.n_empty} empty); mean {pm.mean:,.1f}, "
            f"P95 {pm.p95:,.1f}, P99 {pm.p99:,.1f}, max {pm.max:,.0f} requests/min; "
            f"peak/mean {_fmt(pm.peak_to_mean)}"
        )
    else:
        lines.append(f"per minute:  {_missing(pm)}")
    pw = p.per_window
    if pw is not None and pw.rps is not None:
        lines.append(
            f"per window:  {pw.n_bins} x {pw.bin_s:g} s; mean {pw.rps.mean:,.1f}, "
            f"P99 {pw.rps.p99:,.1f}, max {pw.rps.max:,.1f} req/s; peak/mean {_fmt(pw.peak_to_mean)}"
        )
    ps = p.per_second
    if ps is not None and ps.available:
        lines.append(f"per second:  max {ps.max:,.0f} req/s, P99 {ps.p99:,.1f}, peak/mean {_fmt(ps.peak_to_mean)}")
    else:
        lines.append(f"per second:  {_missing(ps)}")
    dec = p.decomposition
    if dec is not None and dec.available:
        comps = ", ".join(f"{c.name} (amplitude {c.amplitude_rps:,.1f} req/s, cycle-to-cycle correlation "
                          f"{_fmt(c.cycle_correlation)})" for c in dec.components)
        lines.append(f"cycles:      {comps}")
    else:
        lines.append(f"cycles:      {_missing(dec)}")
    b = p.bursts
    if b is not None and b.count is not None:
        lines.append(f"bursts:      {b.count} above {b.k:g}x baseline"
                     + (f", ~{b.per_month:.1f}/month" if b.count else ""))
    disp = p.dispersion
    if disp is not None and disp.available:
        lines.append(f"dispersion:  index {_fmt(disp.index_of_dispersion)}, inter-arrival CV "
                     f"{_fmt(disp.interarrival_cv)}")
    targets = p.targets
    t = targets.target if targets is not None and targets.target is not None else targets
    if t is not None and t.rps is not None:
        ci95 = t.ci95
        ci = f" (95% CI {ci95[0]:,.2f}–{ci95[1]:,.2f})" if ci95 else ""
        near = targets.near_term if targets is not None else None
        near_rps = f"{near.rps:,.2f} req/s" if near is not None and near.rps is not None else "n/a"
        lines.append(f"target:      {t.rps:,.2f} req/s = P{(t.quantile or 0.0) * 100:g} x growth "
                     f"{t.growth if t.growth is not None else 1.0:g}{ci}; near term {near_rps}")
        mt = targets.mid_term if targets is not None else None
        lines.append(f"mid term:    {mt.rps:,.2f} req/s" if mt is not None and mt.available and mt.rps is not None
                     else f"mid term:    {_missing(mt)}")
    if isinstance(p.mix_shares, list):
        lines.append("mixes:       " + ", ".join(f"{r.mix} {r.share:.1%}" for r in p.mix_shares))
    mp = p.mix_peaks
    if mp is not None and mp.available and len(mp.rows) > 1:
        own = ", ".join(f"{r.mix} {r.target_rps:,.2f} (share x overall {r.share_method_rps:,.2f})" for r in mp.rows)
        lines.append(f"mix peaks:   own P{(mp.quantile or 0.0) * 100:g} req/s per {mp.bin_s:g} s: {own}")
    if p.passive_limit is not None:
        lines.append(f"passive:     {p.passive_limit.text()}")
    m = p.metrics
    if m is not None:
        lines.append(f"metrics:     {m.request_metric} every {m.step_s:g} s, {m.n_series} series, "
                     f"{m.counter_resets} counter reset(s), {m.gaps} gap(s); per {m.mix_label}: "
                     + ", ".join(f"{r.mix} {r.share:.1%}" for r in m.per_mix))
    slo = p.slo_budget
    if slo is not None and slo.available and slo.consumed is not None:
        lines.append(f"SLO budget:  {slo.consumed.fraction:.1%} of the {slo.objective:.2%} budget consumed, "
                     f"burn rate {slo.burn_rate:.3g}")
    else:
        lines.append(f"SLO budget:  {_missing(slo)}")
    sl = p.seq_len
    if sl is not None and sl.available and sl.p50 is not None:
        lines.append(f"seq length:  input+output tokens P50 {sl.p50:,.0f}, P90 {sl.p90:,.0f}, P99 {sl.p99:,.0f}, "
                     f"max {sl.max:,.0f} ({sl.n:,} requests)")
    else:
        lines.append(f"seq length:  {_missing(sl)}")
    return lines


__all__ = ["summary_lines"]
