"""``bearing export`` (the plan as deployable settings) and ``bearing bottleneck`` (server metrics → the
resource that binds at the limit).

Top-level imports stay light (typer only): the work is imported inside the commands.
"""

from __future__ import annotations

from pathlib import Path

import typer

ALL = "prometheus,hpa,keda,envoy,nginx"


def export_cmd(
    out: Path = typer.Argument(..., help="Folder to write the files into (created)."),
    plan: Path = typer.Option(..., "--plan", help="Plan JSON (bearing plan --json)."),
    fmt: list[str] = typer.Option(["all"], "--format", "-f",
                                  help="prometheus, hpa, keda, envoy, nginx or all (repeatable, or "
                                       "comma-separated)."),
    limits: Path | None = typer.Option(None, "--limits",
                                       help="Limits JSON for the SLA (default: the plan's sources.limits)."),
    namespace: str = typer.Option("default", "--namespace", help="Kubernetes namespace of the model server."),
    deployment: str = typer.Option("vllm", "--deployment", help="Deployment the autoscalers scale."),
    selector: str | None = typer.Option(None, "--selector",
                                        help="PromQL label matchers for the server's series "
                                             "(default: namespace=\"<namespace>\")."),
    prometheus_url: str = typer.Option("http://prometheus-operated.monitoring.svc:9090", "--prometheus-url",
                                       help="Prometheus the KEDA trigger queries."),
    pods_metric: str = typer.Option("vllm_requests_per_second", "--pods-metric",
                                    help="Per-pod custom metric the HPA reads."),
    queue_target: float | None = typer.Option(None, "--queue-target",
                                              help="Also scale on waiting requests per pod above this (the "
                                                   "plan has no queue figure)."),
    for_minutes: int = typer.Option(5, "--for-minutes", help="CBU and latency alerts fire after this long."),
    slo_window_days: float = typer.Option(30.0, "--slo-window-days", help="Error-budget window, days."),
    instances: int = typer.Option(1, "--instances",
                                  help="Instances behind one rate limiter (1: one limiter per instance)."),
    min_replicas: int | None = typer.Option(None, "--min-replicas", help="Override the plan's min replicas."),
    max_replicas: int | None = typer.Option(None, "--max-replicas", help="Override the plan's max replicas."),
    cool_down_s: float | None = typer.Option(None, "--cool-down-s",
                                             help="Override the elasticity replay's cool-down, s."),
    tenant_header: str = typer.Option("x-tenant-id", "--tenant-header",
                                      help="Request header naming the tenant, for the per-tenant rate limits "
                                           "of a plan built with --tenant-column."),
    check: bool = typer.Option(False, "--check", help="Validate every file written with its tool; exit 1 when "
                                                      "one fails."),
    server_metrics: Path | None = typer.Option(
        None, "--server-metrics", help="The load test's server metrics (as for bearing bottleneck): the "
        "autoscalers also scale on the signal the bottleneck names (KV cache or queue), at its value at the "
        "last step that held the SLA."),
    metrics_format: str | None = typer.Option(None, "--metrics-format", help="Format of --server-metrics."),
    run: str | None = typer.Option(None, "--run", help="Run id of --server-metrics / the limits JSON."),
    profile: Path | None = typer.Option(None, "--profile",
                                        help="Profile JSON with hour-of-day slots (a day or more on a UTC clock): "
                                             "KEDA cron triggers hold each hour's floor, ceil(hour P95 / "
                                             "allowable), and minReplicaCount drops to the off-peak floor."),
) -> None:
    """Write the plan as Prometheus alert rules, an HPA, a KEDA ScaledObject, Envoy and nginx rate limits."""
    from bearing_lib.cli._common import bearing_errors

    with bearing_errors():
        from bearing_lib.ops.exports import ExportTarget, export, read_plan

        wanted: list[str] = []
        for item in fmt:
            for f in (ALL if item.strip() == "all" else item).split(","):
                if f.strip() and f.strip() not in wanted:
                    wanted.append(f.strip())
        numbers = read_plan(plan, limits_path=limits)
        target = ExportTarget(namespace=namespace, deployment=deployment, selector=selector,
                        prometheus_url=prometheus_url, pods_metric=pods_metric, queue_target=queue_target,
                        for_minutes=for_minutes,
                        slo_window_days=slo_window_days, instances=instances, min_replicas=min_replicas,
                        max_replicas=max_replicas, cool_down_s=cool_down_s, tenant_header=tenant_header)
        import dataclasses

        if server_metrics is not None:
            target = dataclasses.replace(target, binding=_binding_from_metrics(
                server_metrics, metrics_format, numbers.limits_path, run))
        if profile is not None:
            from bearing_lib.ops.schedule import schedule_from_profile

            target = dataclasses.replace(target, schedule=schedule_from_profile(profile, numbers))
            typer.echo(f"schedule: {target.schedule.statement()}")
        written = export(numbers, wanted, out, target, check=check)
        typer.echo(f"allowable {numbers.per_instance_allowable_rps:.4g} req/s per instance; autoscaler target "
                   f"{numbers.scale_target_rps:.4g} req/s per pod (cbu.threshold {numbers.cbu_threshold:g})")
        if numbers.bound_note:
            typer.echo(("warning: " if numbers.limit_bound == "upper" else "note: ") + numbers.bound_note)
        if not numbers.sla:
            typer.echo("note: no limits JSON found: no SLA latency or error-budget alerts")
        for f, paths in written.files.items():
            typer.echo(f"wrote {f}: {', '.join(paths)}")
        typer.echo(f"wrote {Path(written.out_dir) / 'exports.json'}")
        if check:
            failed = False
            for c in written.checks:
                state = "passed" if c.ok else ("FAILED" if c.ok is False else "not run")
                typer.echo(f"check {Path(c.path).name}: {c.validator}: {state}" + ("" if c.ok else f"\n  {c.output}"))
                failed = failed or c.ok is False
            if failed:
                raise typer.Exit(code=1)

def _binding_from_metrics(metrics: Path, fmt: str | None, limits_path: str | None, run: str | None):  # noqa: ANN202
    """The binding-resource trigger (:func:`bearing_lib.ops.triggers.binding_part`, as the report derives it),
    the limits JSON read at this edge; None (with a note) when the metrics name none."""
    from bearing_lib.common.errors import ParameterError
    from bearing_lib.common.files import read_json
    from bearing_lib.common.schema import NotAvailable
    from bearing_lib.limits.result import LimitsResult
    from bearing_lib.loaders import load
    from bearing_lib.ops.triggers import binding_part

    ds = load(metrics, format=fmt)
    if ds.kind != "metrics":
        raise ParameterError(f"{metrics} holds {ds.kind} ({ds.provenance.format}), not server metrics")
    doc = (LimitsResult.from_dict(read_json(Path(limits_path), "limits JSON"), source=str(limits_path))
           if limits_path is not None else None)
    trig = binding_part(ds, doc, metrics_path=str(metrics), run=run, strict=True)
    if isinstance(trig, NotAvailable):
        typer.echo(f"note: no binding-signal trigger: {trig.reason}")
        return None
    typer.echo(f"binding signal: {trig.evidence}")
    return trig


def bottleneck_cmd(
    metrics: Path = typer.Argument(..., help="Server metrics: a file or folder (Prometheus scrape(s), query "
                                             "JSON, inference-perf Prometheus reports, DCGM CSV)."),
    fmt: str | None = typer.Option(None, "--format",
                                   help="Metrics format (e.g. inference-perf-prometheus for a report folder)."),
    step: int | None = typer.Option(None, "--step", help="The limit step (the first step past the limit)."),
    limits: Path | None = typer.Option(None, "--limits",
                                       help="Limits JSON: the limit step is the first failing step of "
                                            "--run/--mix."),
    run: str | None = typer.Option(None, "--run", help="Run id in the limits JSON."),
    mix: str | None = typer.Option(None, "--mix", help="Mix name in the limits JSON."),
    trace: Path | None = typer.Option(None, "--trace",
                                      help="The load test's request trace: align timed samples to its steps."),
    offset_s: float = typer.Option(0.0, "--offset-s", help="Seconds added to the trace's times to reach the "
                                                          "metrics' clock."),
    json_out: Path | None = typer.Option(None, "--json", help="Write the per-step signals and the verdict here."),
) -> None:
    """Per-step resource signals and the bottleneck at the limit, from documented rules."""
    from bearing_lib.cli._common import bearing_errors

    with bearing_errors():
        import json

        from bearing_lib.common.errors import ParameterError
        from bearing_lib.loaders import load, load_trace
        from bearing_lib.servers.bottleneck import bottleneck_at_limit, find_limit_step
        from bearing_lib.servers.metrics import align_to_steps, step_signals, step_windows

        ds = load(metrics, format=fmt)
        if ds.kind != "metrics":
            raise ParameterError(f"{metrics} holds {ds.kind} ({ds.provenance.format}), not server metrics")
        if trace is not None:
            ds = align_to_steps(ds, step_windows(load_trace(trace), offset_s=offset_s))
        if step is None:
            from bearing_lib.common.files import read_json
            from bearing_lib.limits.result import LimitsResult

            doc = (LimitsResult.from_dict(read_json(limits, "limits JSON"), source=str(limits))
                   if limits is not None else None)
            found = find_limit_step(doc, run_id=run,
                                    mix=mix, metrics_path=metrics, metrics_format=str(ds.provenance.format))
            step = found.step
            if found.basis is not None:
                typer.echo(f"limit step {step}: {found.basis}" + ("" if limits is not None else
                                                                  " (give --step or --limits to choose)"))
        table = step_signals(ds)
        verdict = bottleneck_at_limit(table, limit_step=step, run_id=run, metrics=ds)
        for f in ds.provenance.findings:
            if f.level == "warning":
                typer.echo(f"finding: {f.code}: {f.message}")
        for r in table.iter_rows(named=True):
            typer.echo(f"step {r['step']}: {r['signal']} mean {r['mean']:.4g}, high {r['high']:.4g}"
                       + (f", increase {r['increase']:.4g}" if r["increase"] is not None else ""))
        typer.echo(f"bottleneck: {verdict.statement}")
        if json_out is not None:
            json_out.write_text(json.dumps({"signals": table.to_dicts(), "bottleneck": verdict.to_dict(),
                                            "findings": [str(f) for f in ds.provenance.findings]}, indent=1))
            typer.echo(f"wrote {json_out}")


def register(app: typer.Typer) -> None:
    app.command("export")(export_cmd)
    app.command("bottleneck")(bottleneck_cmd)
