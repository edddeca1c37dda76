"""``bearing twin fit|predict``: a calibrated model of the server, and the limits it predicts.

``bearing twin fit LOADTEST... --sla "..." --json twin.json`` calibrates the twin on a per-request
load test and validates it on the same test; ``bearing twin predict twin.json (--production TRACE |
--mixes FILE | --tested-mix) [--instances N] [--prompt-scale X] --sla "..." --json OUT`` predicts
the SLA limit of a mix (docs/twin.md). Exit codes: 0 written; 1 a bearing error.

Top-level imports stay light (typer only): the library is imported inside the commands.
"""

from __future__ import annotations

from pathlib import Path

import typer

twin_app = typer.Typer(help="The digital twin: calibrate a server model on a load test, predict other mixes' limits.",
                       no_args_is_help=True)


@twin_app.command("fit")
def fit_cmd(
    loadtests: list[Path] = typer.Argument(..., help="Per-request load-test files or folders (one stepped test)."),
    sla: list[str] = typer.Option([], "--sla", help="The SLA the validation judges steps by. Repeatable."),
    json_out: Path = typer.Option(..., "--json", help="Where to write the twin JSON."),
    n_boot: int = typer.Option(200, "--n-boot", help="Bootstrap resamples of the steps (CIs)."),
    seed: int = typer.Option(0, "--seed", help="Random seed of the bootstrap."),
    format: str | None = typer.Option(None, "--format", help="Skip detection and use this format."),
    engine: list[str] = typer.Option([], "--engine", help="An engine setting the operator knows, NAME=VALUE: "
                                     "max_num_seqs, kv_budget_tokens, max_batched_tokens, kv_policy "
                                     "(reserve|paged), request_timeout_s (seconds or none). Used instead of what "
                                     "the test shows. Repeatable."),
    replicas: int | None = typer.Option(None, "--replicas", help="Replicas the test ran against behind a "
                                        "round-robin router: the twin is one replica's server (default: the "
                                        "limits' conditions.instances with --limits, else 1)."),
    limits: Path | None = typer.Option(None, "--limits", help="A `bearing limits` JSON of this test: its "
                                       "conditions.instances gives the replicas (router unknown: round-robin if "
                                       "that twin validates, else the deployment as one server)."),
) -> None:
    """Calibrate the twin on a load test and validate it on the same test."""
    import json

    from bearing_lib.cli._common import bearing_errors
    from bearing_lib.common.errors import SLAParseError

    with bearing_errors():
        if not sla:
            raise SLAParseError("no SLA given: pass --sla 'p99(ttft) <= 500ms' (the validation judges steps by it)")
        from bearing_lib.common.progress import progress_for, progress_wanted
        from bearing_lib.twin import fit_twin

        # --replicas says the router is round-robin; a count only stated by the limits leaves the router unknown
        with progress_for("twin fit", enabled=progress_wanted()) as bar:
            twin = fit_twin(loadtests, sla, n_boot=n_boot, seed=seed, format=format, known=_engine(engine),
                            replicas=_replicas(replicas, limits), router_known=replicas is not None, progress=bar)
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(twin.to_dict(), ensure_ascii=False) + "\n", encoding="utf-8")
        typer.echo(twin.summary())
        typer.echo(f"wrote {json_out}")


def _replicas(replicas: int | None, limits: Path | None) -> int:
    """``--replicas``, else the limits document's ``conditions.instances``, else 1."""
    import json

    from bearing_lib.common.errors import InputError, ParameterError

    if replicas is not None:
        if replicas < 1:
            raise ParameterError(f"--replicas must be at least 1, got {replicas}")
        return replicas
    if limits is None:
        return 1
    try:
        doc = json.loads(limits.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"cannot read the limits document ({exc})", path=limits) from None
    from bearing_lib.twin.replay import tested_replicas

    return tested_replicas((doc.get("conditions") or {}).get("instances") if isinstance(doc, dict) else None)


def _engine(pairs: list[str]) -> dict[str, float | str]:
    """``--engine NAME=VALUE`` pairs: numbers, except ``kv_policy``."""
    from bearing_lib.common.errors import ParameterError

    out: dict[str, float | str] = {}
    for item in pairs:
        name, sep, value = item.partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not name or not value:
            raise ParameterError(f"--engine {item!r}: expected NAME=VALUE, e.g. --engine max_num_seqs=256")
        if name == "kv_policy" or (name == "request_timeout_s" and value.lower() in ("none", "off")):
            out[name] = value
            continue
        try:
            out[name] = float(value.replace("_", ""))
        except ValueError:
            raise ParameterError(f"--engine {item!r}: {name} must be a number, got {value!r}") from None
    return out


@twin_app.command("predict")
def predict_cmd(
    twin_json: Path = typer.Argument(..., help="A twin written by `bearing twin fit`."),
    production: Path | None = typer.Option(None, "--production", help="A production trace: its length mix."),
    mixes: Path | None = typer.Option(None, "--mixes", help="A YAML/JSON file of lognormal mixes (docs/twin.md)."),
    tested_mix: bool = typer.Option(False, "--tested-mix", help="Predict for the calibration test's own mix."),
    sla: list[str] = typer.Option([], "--sla", help="The SLA to predict the limit under. Repeatable."),
    instances: int | None = typer.Option(None, "--instances", help="Instances (limit × N; default: the "
                                         "replicas the twin's test ran against, 1 for one server)."),
    dispatch: str | None = typer.Option(None, "--dispatch", help="random | round_robin (default: round_robin "
                                        "for a twin fitted with --replicas > 1, else random)."),
    prompt_scale: float = typer.Option(1.0, "--prompt-scale", help="Multiply every prompt's length."),
    request_timeout: str | None = typer.Option(None, "--request-timeout", help="What-if: another deadline in "
                                               "front of the engine, seconds, or 'none' (default: the twin's)."),
    json_out: Path = typer.Option(..., "--json", help="Where to write the predictions JSON."),
    draws: int | None = typer.Option(None, "--draws", help="Parameter draws propagated into the CI (default 12, the "
                                     "same as the report's and the notebook's: same seed, same answer)."),
    seed: int = typer.Option(0, "--seed", help="Random seed of the simulation."),
    format: str | None = typer.Option(None, "--format", help="Format of the production trace."),
) -> None:
    """Predict the SLA limit (offered rps, labelled predicted) of a mix through a calibrated twin."""
    import json

    from bearing_lib.cli._common import bearing_errors
    from bearing_lib.common.errors import ParameterError, SLAParseError

    with bearing_errors():
        if not sla:
            raise SLAParseError("no SLA given: pass --sla 'p99(ttft) <= 500ms'")
        chosen = [n for n, v in (("--production", production), ("--mixes", mixes), ("--tested-mix", tested_mix)) if v]
        if len(chosen) != 1:
            raise ParameterError("give exactly one of --production TRACE, --mixes FILE or --tested-mix"
                                 + (f" (got {', '.join(chosen)})" if chosen else ""))
        from bearing_lib.twin import predict_twin
        from bearing_lib.twin.timeout import KEEP, parse_request_timeout

        rto = KEEP if request_timeout is None else parse_request_timeout(request_timeout)
        from bearing_lib.common.progress import progress_for, progress_wanted

        with progress_for("twin predict", enabled=progress_wanted()) as bar:
            doc = predict_twin(twin_json, sla, production=production, mixes=mixes, instances=instances,
                               prompt_scale=prompt_scale, n_draws=draws, seed=seed, format=format,
                               request_timeout=rto, dispatch=dispatch, progress=bar)
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(doc.to_dict(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        for p in doc.predictions:
            typer.echo(p.text())
        typer.echo(f"wrote {json_out}")


def register(app: typer.Typer) -> None:
    app.add_typer(twin_app, name="twin")


__all__ = ["register"]
