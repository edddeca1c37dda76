"""``bearing compare RUN_OR_LIMITS... --sla "..."``: which deployment to run, with the uncertainty of the answer.

Exit codes: 0 comparison written; 1 a bearing error (bad input, bad SLA, bad parameter).
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from bearing_lib.cli._common import bearing_errors
from bearing_lib.common.errors import ParameterError


def per_name(items: list[str], flag: str, cast: type) -> object:
    """``[VALUE]`` for every deployment, or ``NAME=VALUE`` per deployment (a dict); not both."""
    if not items:
        return None
    named: dict[str, object] = {}
    scalar = None
    for item in items:
        name, sep, raw = item.partition("=")
        value_text = raw if sep else item
        try:
            value = cast(value_text)
        except ValueError:
            raise ParameterError(f"{flag} {item!r}: expected {'NAME=' if sep else ''}{cast.__name__}") from None
        if sep:
            if name in named:
                raise ParameterError(f"{flag} {name} given twice")
            named[name] = value
        elif scalar is not None:
            raise ParameterError(f"{flag} given twice for all deployments")
        else:
            scalar = value
    if named and scalar is not None:
        raise ParameterError(f"{flag}: give one value for all deployments or NAME=VALUE for each, not both")
    return named or scalar


def _print(c) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(highlight=False, soft_wrap=True)
    for line in c.answer:
        console.print(line)
    t = Table(title_justify="left")
    cols = ("deployment", "model", "gpus", "limit (offered)", "req/s per instance", "tok/s per GPU",
            "tok/s per user", "$/1M out", "fleet")
    for col in cols:
        # names fold, not cut: a narrow terminal keeps every deployment and model whole
        t.add_column(col, overflow="fold" if col in ("deployment", "model") else "ellipsis")
    def short(e) -> str:
        return "–" if e is None else e.text(3, ci=False, unit=False, missing="–")

    for d in c.deployments:
        t.add_row(d.name, d.identity.model or "unknown", str(d.identity.gpus or "?"), short(d.limit),
                  short(d.per_instance_rps), short(d.per_gpu_tps),
                  "–" if d.per_user_tps is None else f"{d.per_user_tps:.1f}", short(d.cost_per_1m_output_tokens),
                  d.fleet.statement if d.fleet else "–")
    console.print(t)
    console.print("limit: offered load at the SLA crossing (the test's unit); req/s per instance: achieved there")
    for p in c.pairs:
        console.print(p.statement)
    for d in c.deployments:
        console.print(f"{d.name}: comparisons use {d.uncertainty}")


def register(app: typer.Typer) -> None:
    @app.command("compare")
    def compare_cmd(
        inputs: list[str] = typer.Argument(..., metavar="RUN_OR_LIMITS...", help="Load-test files or folders, or "
                                           "limits JSON files; NAME=PATH names a deployment. One deployment per run."),
        sla: list[str] = typer.Option([], "--sla", help="SLA clause(s) for load tests, e.g. 'p90(ttft) <= 500ms'. "
                                      "Repeatable. Limits JSON files carry their own."),
        sla_file: Path | None = typer.Option(None, "--sla-file", help="YAML file with a list of SLA clauses."),
        mix: str | None = typer.Option(None, "--mix", help="The mix to compare when a limits JSON holds several."),
        label: list[str] = typer.Option([], "--label", help="NAME=key=value[,key=value]: model, engine, "
                                        "engine_version, hardware, gpus, instances, tp, pp, or an option "
                                        "(quantization=fp8, chunked_prefill=on). Repeatable."),
        hardware: list[str] = typer.Option([], "--hardware", help="Hardware for all deployments, or NAME=HW each."),
        gpus: list[str] = typer.Option([], "--gpus", help="GPUs of the tested deployment (all instances): N for "
                                       "all, or NAME=N each."),
        price_per_hour: list[str] = typer.Option([], "--price-per-hour", help="Price of one serving instance per "
                                                 "hour, $: P for all, or NAME=P each."),
        profile: Path | None = typer.Option(None, "--profile", help="Profile JSON (bearing profile --json): the "
                                            "fleet that carries its target at the tier's FOS."),
        tier: str = typer.Option("standard", "--tier", help="Service tier: critical, standard or non-core."),
        n_boot: int = typer.Option(200, "--n-boot", help="Bootstrap resamples for load tests fitted here."),
        seed: int = typer.Option(0, "--seed", help="Seed of every random draw."),
        format: str | None = typer.Option(None, "--format", help="Skip detection and read load tests in this format."),
        estimator: str = typer.Option("model", "--estimator", help="The estimator of request traces fitted here: "
                                      "model (default) or pooled, as bearing limits --estimator (limits JSON files "
                                      "carry their own)."),
        json_out: Path | None = typer.Option(None, "--json", help="Write the comparison JSON here."),
        html_out: Path | None = typer.Option(None, "--html", help="Write a self-contained HTML page here."),
    ) -> None:
        """Compare deployments under one SLA: limits, per-GPU and per-user throughput, cost, and which to run."""
        with bearing_errors():
            from bearing_lib.compare import compare, write_page
            from bearing_lib.compare.identity import parse_label

            sla_obj = None
            if sla or sla_file is not None:
                from bearing_lib.limits.sla import combine, load_sla_file, parse_sla

                parts = ([parse_sla(sla)] if sla else []) + ([load_sla_file(sla_file)] if sla_file else [])
                sla_obj = combine(*parts) if len(parts) > 1 else parts[0]
            labels: dict[str, dict[str, str]] = {}
            for item in label:
                name, kv = parse_label(item)
                labels.setdefault(name, {}).update(kv)
            c = compare(inputs, sla=sla_obj, mix=mix, labels=labels or None,
                        hardware=per_name(hardware, "--hardware", str), gpus=per_name(gpus, "--gpus", int),
                        price_per_hour=per_name(price_per_hour, "--price-per-hour", float), profile=profile,
                        tier=tier, n_boot=n_boot, seed=seed, format=format, estimator=estimator)
            _print(c)
            if json_out is not None:
                json_out.parent.mkdir(parents=True, exist_ok=True)
                json_out.write_text(json.dumps(c.to_dict(), indent=2, ensure_ascii=False, allow_nan=False) + "\n",
                                    encoding="utf-8")
                typer.echo(f"wrote {json_out}")
            if html_out is not None:
                write_page(c, html_out)
                typer.echo(f"wrote {html_out}")


__all__ = ["per_name", "register"]
