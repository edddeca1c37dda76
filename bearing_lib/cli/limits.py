"""``bearing limits TRACE... --sla "..." --json OUT``: SLA-constrained limits per request mix.

Exit codes: 0 limits written; 1 a bearing error (bad input, bad SLA, bad parameter).
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from bearing_lib.cli._common import bearing_errors
from bearing_lib.common.errors import ParameterError, SLAParseError


def _fmt(v: float | None) -> str:
    return "–" if v is None else f"{v:.4g}"


def _table(result) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(highlight=False, soft_wrap=True)
    t = Table(title=f"Limits for SLA: {result.sla.text}", title_justify="left")
    for col in ("run", "mix", "share", "Q_ult", "95% CI", "bracket", "binding"):
        t.add_column(col)
    for m in result.limits:
        q = m.q_ult
        ci = q["ci95"]
        short = {"above": "≥ ", "below": "< "}.get(str(q["censored"]), "") + _fmt(q["value"]) + f" {q['unit'] or ''}"
        if q["censored"] == "not_monotone":
            short += " (not monotone)"
        t.add_row(m.run_id, m.mix.name, f"{m.share:.0%}", short, f"[{_fmt(ci[0])}, {_fmt(ci[1])}]",
                  f"[{_fmt(q['bracket'][0])}, {_fmt(q['bracket'][1])}]", m.binding or "–")
    console.print(t)
    for m in result.limits:
        console.print(f"{m.run_id} / {m.mix.name}: {m.q_ult['statement']}")
        for n in m.notes:
            if n.startswith("follow-up test:"):
                console.print(f"  {n}")
    if result.blended:
        console.print(f"blended capacity: {result.blended['statement']}")
    for s in result.skipped:
        console.print(f"skipped {s['run_id']}/{s['mix']}: {s['reason']}")
    for n in result.notes:
        console.print(f"note: {n}")


def register(app: typer.Typer) -> None:
    @app.command("limits")
    def limits_cmd(
        traces: list[Path] = typer.Argument(..., help="Load-test files or folders (any format bearing reads)."),
        sla: list[str] = typer.Option([], "--sla", help="SLA clause(s), e.g. 'p99(ttft) <= 500ms'. Repeatable."),
        sla_file: Path | None = typer.Option(None, "--sla-file", help="YAML file with a list of SLA clauses."),
        mixes: str = typer.Option("auto", "--mixes", help="auto | none | a YAML/JSON file of mix definitions."),
        weights: Path | None = typer.Option(None, "--weights", help="YAML/JSON production weights per mix."),
        json_out: Path = typer.Option(..., "--json", help="Where to write the limits JSON."),
        n_boot: int = typer.Option(1000, "--n-boot", help="Bootstrap resamples (0 = none)."),
        seed: int = typer.Option(0, "--seed", help="Random seed of the bootstrap."),
        min_share: float = typer.Option(0.05, "--min-share", help="Skip run×mix groups below this share."),
        format: str | None = typer.Option(None, "--format", help="Skip detection and use this format."),
        pool: bool = typer.Option(False, "--pool", help="Pool all runs (repeats and follow-ups of the same "
                                  "service) into one limit per mix."),
    ) -> None:
        """Fit the highest load each request mix carries while the SLA holds, with a 95% CI."""
        from bearing_lib.limits.fit import fit_limits
        from bearing_lib.limits.sla import combine, load_sla_file, parse_sla
        from bearing_lib.loaders import load

        with bearing_errors():
            if not sla and sla_file is None:
                raise SLAParseError("no SLA given: pass --sla 'p99(ttft) <= 500ms' (repeatable) or --sla-file F.yaml")
            parts = []
            if sla:
                parts.append(parse_sla(sla))
            if sla_file is not None:
                parts.append(load_sla_file(sla_file))
            sla_obj = combine(*parts) if len(parts) > 1 else parts[0]
            datasets = []
            for p in traces:
                ds = load(p, format=format) if format else load(p)
                if ds.kind not in ("requests", "loadpoints"):
                    raise ParameterError(f"{p}: a {ds.kind} dataset holds no load test; limits need requests "
                                         "or load points from a stepped test")
                datasets.append(ds)
            mix_arg: object = mixes
            if mixes not in ("auto", "none"):
                if not Path(mixes).exists():
                    raise ParameterError(f"--mixes: expected auto, none or a mix file; {mixes!r} does not exist")
                mix_arg = Path(mixes)
            result = fit_limits(datasets, sla_obj, mixes=mix_arg, weights=weights, n_boot=n_boot, seed=seed,
                                min_share=min_share, pool_runs=pool)
            json_out.parent.mkdir(parents=True, exist_ok=True)
            json_out.write_text(json.dumps(result.to_dict(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
            _table(result)
            typer.echo(f"wrote {json_out}")


__all__ = ["register"]
