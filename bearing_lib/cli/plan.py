"""``bearing plan --limits L --profile P``: factor of safety, verdict and capacity plan."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from bearing_lib.cli._common import bearing_errors
from bearing_lib.common.errors import ParameterError


def _load_user_inputs(path: Path | None) -> dict | None:
    if path is None:
        return None
    from bearing_lib.plan.capacity_plan import read_json

    return read_json(path, "user inputs")


def _read_text(path: Path | None) -> str | None:
    if path is None:
        return None
    from bearing_lib.common.errors import InputError

    try:
        return path.read_text(errors="replace")
    except OSError as exc:
        raise InputError(f"cannot read the vLLM log ({exc.strerror})", path=path) from exc


def register(app: typer.Typer) -> None:
    @app.command("plan")
    def plan_cmd(
        limits: Path = typer.Option(..., "--limits", help="Limits JSON (bearing limits --json)."),
        profile: Path = typer.Option(..., "--profile", help="Profile JSON (bearing profile --json)."),
        tier: str = typer.Option("standard", "--tier", help="Service tier: critical, standard or non-core."),
        run: str | None = typer.Option(None, "--run", help="Run id in the limits file (when it holds several)."),
        fos_min: float | None = typer.Option(None, "--fos-min", help="Override the tier's minimum FOS."),
        fos_max: float | None = typer.Option(None, "--fos-max", help="Override the tier's maximum FOS."),
        design_fos: float | None = typer.Option(None, "--design-fos",
                                                help="Target FOS for allowable capacity (default: tier minimum)."),
        target_rps: float | None = typer.Option(None, "--target-rps",
                                                help="Planned load in req/s (default: the profile's target)."),
        growth: float | None = typer.Option(None, "--growth", help="Growth factor applied to the target."),
        model: str | None = typer.Option(None, "--model", help="Model preset for the memory plan, e.g. llama-3.1-8b."),
        gpu_mem_gib: float | None = typer.Option(None, "--gpu-mem-gib", help="GPU memory per GPU, GiB."),
        gpu_count: int = typer.Option(1, "--gpu-count", help="GPUs per instance."),
        concurrency: int | None = typer.Option(None, "--concurrency",
                                               help="Concurrent sequences per instance for the memory plan."),
        tested_instances: int | None = typer.Option(None, "--tested-instances",
                                                    help="Instances the load test drove (default: file, else 1)."),
        cold_start_s: float = typer.Option(90.0, "--cold-start-s", help="Instance cold start, s (40-150 typical)."),
        cool_down_min: float = typer.Option(20.0, "--cool-down-min", help="Scale-down cool-down, minutes (15-30)."),
        burst_multiplier: float | None = typer.Option(None, "--burst-multiplier",
                                                      help="Plan bursts as this multiple of the target."),
        trace: Path | None = typer.Option(None, "--trace",
                                          help="Production trace: per-minute series and sequence lengths, for a "
                                               "profile JSON without them (`bearing profile` writes both)."),
        inputs: Path | None = typer.Option(None, "--inputs",
                                           help="JSON with user-supplied scorecard inputs (data, engineering, "
                                                "budget, health)."),
        vllm_log: Path | None = typer.Option(None, "--vllm-log",
                                             help="A vLLM start-up log: check the KV arithmetic against it."),
        tensor_parallel: int = typer.Option(1, "--tensor-parallel", help="Tensor-parallel size of that vLLM run."),
        price_per_hour: float | None = typer.Option(None, "--price-per-hour",
                                                    help="Price of one instance per hour, $: adds $/1M output tokens, "
                                                         "the monthly fleet and burst-buffer cost."),
        budget_per_month: float | None = typer.Option(None, "--budget-per-month",
                                                      help="Monthly budget, $: the budget scorecard row judges the "
                                                           "cost against it."),
        server_metrics: Path | None = typer.Option(None, "--server-metrics",
                                                   help="Server metrics with load steps (inference-perf Prometheus "
                                                        "reports, a vLLM scrape folder): check the KV estimate "
                                                        "against the engine's gauge."),
        metrics_format: str | None = typer.Option(None, "--metrics-format",
                                                  help="Format of --server-metrics (default: detected)."),
        zones: int | None = typer.Option(None, "--zones",
                                         help="Zones the instances are spread over evenly: size the fleet to carry "
                                              "the target at the design FOS with --domains-lost zone(s) down (1: "
                                              "a single zone whose nodes are the domains, with --replicas-per-node)."),
        replicas_per_node: int | None = typer.Option(None, "--replicas-per-node",
                                                     help="Replicas per node (with --zones)."),
        domains_lost: int = typer.Option(1, "--domains-lost", help="Domains lost: 1 (N+1) or 2 (N+2)."),
        tenant_column: str | None = typer.Option(None, "--tenant-column",
                                                 help="Column of the --trace file naming the tenant: per-tenant P99 "
                                                      "60 s peaks and max-min fair quotas of the allowable capacity "
                                                      "(bearing export writes them as per-key rate limits)."),
        json_out: Path | None = typer.Option(None, "--json", help="Write the plan JSON here."),
    ) -> None:
        """FOS per mix and blended, verdict, allowable capacity, CBU, instances, elasticity, memory, scorecards."""
        with bearing_errors():
            from bearing_lib.plan.capacity_plan import CapacityPlan
            from bearing_lib.plan.fos import get_tier

            if cool_down_min < 0:
                raise ParameterError(f"--cool-down-min must be >= 0 (got {cool_down_min})")
            tr = None
            if trace is not None:
                from bearing_lib.loaders import load_trace

                tr = load_trace(trace)
            gauge = None
            if server_metrics is not None:
                from bearing_lib.loaders import load
                from bearing_lib.servers.kv_check import kv_gauge

                metrics = load(server_metrics, format=metrics_format)
                if metrics.kind != "metrics":
                    raise ParameterError(f"--server-metrics {server_metrics} holds {metrics.kind} "
                                         f"({metrics.provenance.format}), not server metrics")
                gauge = kv_gauge(metrics)
            plan = CapacityPlan.from_files(
                limits,
                profile,
                tier=get_tier(tier, fos_min=fos_min, fos_max=fos_max, design_fos=design_fos),
                run=run,
                target_rps=target_rps,
                growth=growth,
                model=model,
                gpu_mem_gib=gpu_mem_gib,
                gpu_count=gpu_count,
                concurrency=concurrency,
                tested_instances=tested_instances,
                cold_start_s=cold_start_s,
                cool_down_s=cool_down_min * 60.0,
                burst_multiplier=burst_multiplier,
                trace=tr,
                user_inputs=_load_user_inputs(inputs),
                vllm_log=_read_text(vllm_log),
                tensor_parallel=tensor_parallel,
                price_per_hour=price_per_hour,
                budget_per_month=budget_per_month,
                kv_gauge=gauge,
                zones=zones,
                replicas_per_node=replicas_per_node,
                domains_lost=domains_lost,
                tenant_column=tenant_column,
            )
            for line in plan.summary_lines():
                typer.echo(line)
            if plan.economics is not None:
                for line in plan.economics.summary_lines():
                    typer.echo(line)
            if json_out is not None:
                json_out.parent.mkdir(parents=True, exist_ok=True)
                json_out.write_text(json.dumps(plan.to_dict(), indent=2, ensure_ascii=False, allow_nan=False))
                typer.echo(f"wrote {json_out}")


__all__ = ["register"]
