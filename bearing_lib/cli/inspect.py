"""``bearing inspect PATH``: what bearing sees in a file or folder."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import typer

from bearing_lib.cli._common import OPTION_HELP, bearing_errors, merge_loader_options, parse_loader_options


def describe_dataset(ds) -> list[str]:
    """Human lines: format, tool/version, rows, time span, fields present, findings."""
    prov = ds.provenance
    lines = [
        f"format:   {prov.format} ({prov.tool}, version {prov.tool_version or 'not stated in the file'})",
        f"kind:     {ds.kind}",
        f"rows:     {ds.frame.height:,}",
    ]
    f = ds.frame
    if ds.kind == "requests" and f.height:
        lines.append(_span_line(ds))
        present = [c for c, o in prov.fields.items() if o != "absent"]
        derived = [c for c, o in prov.fields.items() if o == "derived"]
        absent = [c for c, o in prov.fields.items() if o == "absent"]
        lines.append(f"fields:   {', '.join(present)}")
        if derived:
            lines.append(f"derived:  {', '.join(derived)}")
        lines.append(f"absent:   {', '.join(absent) or '-'}")
        if f["status"].is_not_null().any():
            counts = f.group_by("status").len().sort("len", descending=True)
            lines.append("status:   " + ", ".join(f"{r['status']} {r['len']:,}" for r in counts.iter_rows(named=True)))
        if f["step"].is_not_null().any():
            steps = f.group_by("run_id", "step", "offered_load", "offered_load_unit").len().sort("run_id", "step")
            lines.append(f"steps:    {steps.height} (run, step, offered load, requests):")
            for r in steps.iter_rows(named=True):
                load = f"{r['offered_load']} {r['offered_load_unit']}"
                lines.append(f"          {r['run_id']} #{r['step']}: {load}, {r['len']} requests")
    elif ds.kind == "loadpoints":
        lines.append(
            "columns:  "
            + ", ".join(c for c in f.columns if f[c].is_not_null().any())
        )
        lines.append(f"steps:    {f.height} (run, step, offered load, ok/requests):")
        for r in f.iter_rows(named=True):
            load = f"{r['offered_load']} {r['offered_load_unit']}"
            n = f"{r['n_ok']}/{r['n_requests'] if r['n_requests'] is not None else '?'}"
            lines.append(f"          {r['run_id']} #{r['step']}: {load}, {n}")
    elif ds.kind == "rates" and f.height:
        lo = f["window_start_s"].min()
        hi = (f["window_start_s"] + f["window_s"]).max()
        lines.append(
            f"span:     {hi - lo:,.0f} s ({(hi - lo) / 86400:,.2f} days) in {f['window_s'][0]:g} s windows, "
            f"clock {prov.time_origin}"
        )
        if "client" in f.columns:
            lines.append(f"clients:  {f['client'].n_unique():,}")
        agg = ds.aggregate()
        lines.append(
            f"rate:     aggregate req/s per window: mean {agg['rate_rps'].mean():,.2f}, "
            f"peak {agg['rate_rps'].max():,.2f}, min {agg['rate_rps'].min():,.2f}"
        )
        present = [c for c in f.columns if f[c].is_not_null().any()]
        lines.append(f"fields:   {', '.join(present)}")
        pmfs = getattr(ds, "length_pmfs", None)
        if pmfs:
            names = sorted({n for c in pmfs.values() for w in c.values() for n in w})
            lines.append(f"lengths:  PMFs for {len(pmfs)} client(s): {', '.join(names)}")
    if prov.findings:
        lines.append("findings:")
        lines.extend(f"  - {finding}" for finding in prov.findings)
    else:
        lines.append("findings: none")
    lines.append(f"sha256:   {prov.sha256}")
    return lines


def _span_line(ds) -> str:
    """Time span of a request trace, or why there is none."""
    f, prov = ds.frame, ds.provenance
    if prov.time_origin == "none" or f["start_s"].null_count() == f.height:
        steps_frame = getattr(ds, "steps", None)
        total = steps_frame["duration_s"].sum() if steps_frame is not None else None
        return "span:     no per-request times in the source (time_origin none)" + (
            f"; step durations reported by the tool sum to {total:,.1f} s" if total else ""
        )
    lo, hi = f["start_s"].min(), f["start_s"].max()
    end = f["end_s"].max()
    if end is not None:
        hi = max(hi, end)
    clock = f"clock {prov.time_origin}, {prov.timezone}"
    if prov.time_origin == "epoch":
        first = datetime.fromtimestamp(lo, tz=UTC).isoformat(timespec="seconds")
        last = datetime.fromtimestamp(hi, tz=UTC).isoformat(timespec="seconds")
        clock += f"; {first} .. {last}"
    return f"span:     {hi - lo:,.1f} s ({(hi - lo) / 60:,.1f} min), {clock}"


def register(app: typer.Typer) -> None:
    @app.command("inspect")
    def inspect_cmd(
        path: Path = typer.Argument(..., help="A trace or load-test file or folder (gzip is fine)."),
        format: str | None = typer.Option(None, "--format", help="Skip detection and use this format."),
        mapping: Path | None = typer.Option(
            None, "--mapping", help="Column mapping (YAML) for a per-request table (columns, units, status_map); "
            "implies --format generic."
        ),
        skip_bad_lines: bool = typer.Option(
            False, "--skip-bad-lines", help="JSON lines: drop lines that are not JSON objects and report how many."
        ),
        option: list[str] = typer.Option([], "--option", help=OPTION_HELP),
    ) -> None:
        """Print the detected format, row count, time span, fields present and validation findings."""
        from bearing_lib.loaders.registry import call_loader, resolve
        from bearing_lib.loaders.source import Source

        with bearing_errors():
            options = merge_loader_options(parse_loader_options(option), mapping=mapping,
                                           skip_bad_lines=True if skip_bad_lines else None)
            folder = Source(path)
            spec, source = resolve(folder, format or ("generic" if mapping is not None else None))
            ds = call_loader(spec, source, options)
            if source is not folder:
                typer.echo(f"read as: {source.path} (the one recognisable file in the folder)")
            for line in describe_dataset(ds):
                typer.echo(line)


__all__ = ["describe_dataset", "register"]
