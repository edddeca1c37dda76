"""``bearing profile TRACE --json OUT``: the traffic profile of a production trace."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from bearing_lib.cli._common import OPTION_HELP, bearing_errors, merge_loader_options, parse_loader_options
from bearing_lib.common.errors import InputError, ParameterError

if TYPE_CHECKING:  # imported when used: `bearing profile --help` needs neither numpy nor polars
    from bearing_lib.data.mixes import MixSpec


def read_mix_spec(arg: str | None) -> MixSpec | None:
    """``--mixes``: ``none``, a mixes JSON (a list of mixes, or ``{"mixes": [...]}``) or a limits JSON.

    A limits JSON is recognised by its ``mix_spec`` key (``docs/interfaces.md`` section 4).
    """
    from bearing_lib.data.mixes import MixSpec

    if arg is None or arg.lower() == "none":
        return None
    path = Path(arg)
    if not path.is_file():
        raise InputError("no such mixes file", path=path)
    try:
        doc = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc}", path=path) from exc
    if isinstance(doc, dict) and "mix_spec" in doc:
        items = doc["mix_spec"]
    elif isinstance(doc, dict) and isinstance(doc.get("mixes"), list) and all(
        isinstance(m, dict) and "bounds" in m for m in doc["mixes"]
    ):
        items = doc["mixes"]
    else:
        items = doc
    if not isinstance(items, list) or not items:
        raise InputError(
            "expected a limits JSON with a 'mix_spec' key, or a non-empty list of mixes "
            '[{"name": ..., "bounds": {"input_tokens": [lo, hi], ...}}]',
            path=path,
        )
    return MixSpec.from_dict(items)


def _json_default(o: object) -> object:
    if isinstance(o, float) and not math.isfinite(o):
        return None
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def _finite(o: object) -> object:
    """Replace NaN/inf by None so the JSON is strict."""
    if isinstance(o, float):
        return o if math.isfinite(o) else None
    if isinstance(o, dict):
        return {k: _finite(v) for k, v in o.items()}
    if isinstance(o, list | tuple):
        return [_finite(v) for v in o]
    return o


def is_dataset_path(arg: str) -> bool:
    """Whether ``arg`` names a Parquet dataset for the engines: a URL, a glob, or a folder holding
    ``.parquet`` files (a single file goes through the loaders unless an engine is asked for)."""
    if "://" in arg or any(ch in arg for ch in "*?["):
        return True
    p = Path(arg)
    return p.is_dir() and next(p.rglob("*.parquet"), None) is not None


ENGINE_HELP = ("Aggregate on this engine: 'embedded' (polars, lazily from Parquet, this process) or 'dask' "
               "(a Dask cluster; see --scheduler). Default: embedded; every Parquet input (a file, a folder, a glob, "
               "a URL) is read lazily, in one streaming pass.")
SCHEDULER_HELP = "Dask scheduler address (tcp://host:8786) for --engine dask; without it a LocalCluster starts here."


def register(app: typer.Typer) -> None:
    @app.command("profile")
    def profile_cmd(
        trace: str = typer.Argument(..., help="A production trace (per request) or rate windows (e.g. ServeGen); "
                                    "or a Parquet dataset: a folder (hive-partitioned or not), a glob, or a URL."),
        json_out: Path = typer.Option(..., "--json", help="Write the profile JSON here ('-': to stdout, alone, "
                                      "with no summary, notes or progress bar)."),
        mixes: str | None = typer.Option(
            None, "--mixes", help="Mixes for the shares: a mixes JSON, a limits JSON (its mix_spec), or 'none'."
        ),
        quantile: float = typer.Option(0.99, "--quantile", help="Quantile of the per-minute rate for the target."),
        growth: float = typer.Option(1.0, "--growth", help="Growth multiplier on the target."),
        burst_k: float = typer.Option(3.0, "--burst-k", help="A burst is a rate above k x the slot baseline."),
        slo: float = typer.Option(0.999, "--slo", help="Availability objective for the error budget."),
        format: str | None = typer.Option(None, "--format", help="Skip detection and use this format."),
        mapping: Path | None = typer.Option(
            None, "--mapping", help="Column mapping (YAML) for a per-request table; implies --format generic."
        ),
        option: list[str] = typer.Option([], "--option", help=OPTION_HELP),
        force: bool = typer.Option(False, "--force", help="Overwrite an existing JSON file."),
        engine: str | None = typer.Option(None, "--engine", help=ENGINE_HELP),
        scheduler: str | None = typer.Option(None, "--scheduler", help=SCHEDULER_HELP),
        request_metric: str | None = typer.Option(
            None, "--request-metric", help="For Prometheus query JSON: the counter of finished requests "
            "(default vllm:request_success_total)."),
        mix_label: str = typer.Option("model_name", "--mix-label", help="For Prometheus query JSON: the label whose "
                                      "values are the mixes (shares, own peaks, tokens per request)."),
        passive_sla: str | None = typer.Option(
            None, "--passive-sla", help="Also fit the passive limit: the load at which production's own latency "
            "percentile meets this clause, e.g. 'p99(latency) <= 20s' (the trace must carry per-request latency or "
            "TTFT; bearing_lib.twin.passive)."),
        passive_window_s: float = typer.Option(60.0, "--passive-window-s",
                                               help="Window of the passive fit's arrival rate, s."),
    ) -> None:
        """Profile production traffic: per-minute rates, cycles, bursts, mixes, target load, SLO budget."""
        from bearing_lib.common.progress import progress_for, progress_wanted

        with bearing_errors():
            to_stdout = str(json_out) == "-"
            if not to_stdout and json_out.exists() and not force:
                raise ParameterError(f"{json_out} exists; pass --force to overwrite it")
            spec = read_mix_spec(mixes)
            if engine is not None and engine not in ("embedded", "dask"):
                raise ParameterError(f"--engine must be embedded or dask, got {engine!r}")
            if scheduler is not None and engine != "dask":
                raise ParameterError("--scheduler names a Dask scheduler; pass --engine dask with it")
            options = merge_loader_options(parse_loader_options(option), mapping=mapping)
            show = progress_wanted(json_only=to_stdout) and engine != "dask"  # Dask shows its own bars
            params = {"mix_spec": spec, "quantile_level": quantile, "growth": growth, "burst_k": burst_k,
                      "slo_objective": slo}
            metric_params = {"request_metric": request_metric, "mix_label": mix_label}
            with progress_for(f"profiling {trace}", enabled=show) as bar:
                prof = _profile_input(trace, format=format, mapping=mapping, options=options, engine=engine,
                                      scheduler=scheduler, params=params, progress=bar, quiet=to_stdout,
                                      metric_params=metric_params)
            if passive_sla is not None:
                # read as the profile read it: --mapping implies the generic format (_profile_input)
                prof.passive_limit = _passive(trace, prof, passive_sla, passive_window_s,
                                              format=format or ("generic" if mapping is not None else None),
                                              options=options)
            text = json.dumps(_finite(prof.to_dict()), indent=1, default=_json_default) + "\n"
            if to_stdout:
                typer.echo(text, nl=False)
                return
            json_out.parent.mkdir(parents=True, exist_ok=True)
            json_out.write_text(text)
            for line in prof.summary_lines():
                typer.echo(line)
            typer.echo(f"wrote {json_out}")


def _passive(trace: str, prof, sla: str, window_s: float, *, format: str | None,  # noqa: ANN001, ANN202
             options: dict[str, object]):
    """The passive limit of the profiled trace (``bearing_lib.twin.passive.passive_limit``), read whole."""
    from bearing_lib.loaders import load
    from bearing_lib.twin.passive import passive_limit

    if getattr(prof, "metrics", None) is not None or prof.source.kind != "requests":
        raise ParameterError(f"--passive-sla needs per-request latency; {trace} gives "
                             f"{prof.source.kind} (counters and rate windows carry none)")
    ds = load(Path(trace), format=format, **options)
    return passive_limit(ds, sla, window_s=window_s)


def _note(text: str, quiet: bool) -> None:
    """A one-line note on stderr (where the input went), unless the output is JSON alone."""
    if not quiet:
        typer.echo(f"note: {text}", err=True)


def _profile_input(trace: str, *, format: str | None, mapping: Path | None, options: dict[str, object],
                   engine: str | None, scheduler: str | None, params: dict[str, object], progress, quiet: bool,
                   metric_params: dict[str, object] | None = None):  # noqa: ANN001, ANN202
    """Route the input: every Parquet input (a file, a folder, a glob, a URL) streams through the engine
    (``traffic/dataset.py``: one lazy read on the embedded engine, with or without ``--engine``); a large
    CSV / JSON trace is converted once to a cached Parquet file (``traffic/convert.py``) and streams too;
    everything else (small text files, rate windows, other formats) is loaded whole (eager), and a large
    input that stays eager says so."""
    from bearing_lib.common.errors import SchemaError
    from bearing_lib.traffic.dataset import profile_dataset

    time_origin = str(options.get("time_origin", "auto"))
    lazy_options = set(options) <= {"time_origin"}
    path = Path(trace)
    parquet_file = path.is_file() and path.suffix.lower() in (".parquet", ".pq")
    if format is None and mapping is None and lazy_options and (
            engine is not None or is_dataset_path(trace) or parquet_file):
        try:
            return profile_dataset(trace, engine=engine or "embedded", scheduler=scheduler, time_origin=time_origin,
                                   progress=progress, **params)
        except SchemaError as exc:
            if engine is not None or not parquet_file:
                raise
            _note(f"{trace} is not a bearing-canonical Parquet file ({exc.args[0] if exc.args else exc}); "
                  "loading it whole with the format loaders (eager)", quiet)
    elif engine is not None:
        raise ParameterError("--engine reads Parquet datasets of canonical columns; it does not combine "
                             "with --format / --mapping / --option other than time_origin (load other formats "
                             "without --engine)")
    from bearing_lib.traffic import convert

    fmt = format or ("generic" if mapping is not None else None)
    if convert.wants_conversion(path):
        try:
            conv = convert.to_parquet_cache(path, format=fmt, options=options)
        except ParameterError:
            pass  # not per-request traffic with times: the eager path below says what it is
        else:
            _note(("reusing the Parquet copy " if conv.reused else "converted once to Parquet (reused while the "
                   "source is unchanged): ") + f"{conv.parquet}", quiet)
            prof = profile_dataset(str(conv.parquet), engine="embedded", progress=progress, **params)
            prof.source = conv.profile_source(prof.source)
            return prof
    from bearing_lib.loaders import load
    from bearing_lib.traffic.profile import profile_traffic

    if path.is_file() and path.stat().st_size >= convert.min_bytes():
        _note(f"{trace} is profiled in memory (eager): its format is read whole by its loader", quiet)
    ds = load(path, format=fmt, **options)
    if ds.kind == "metrics":  # Prometheus counters: the profile from metrics (traffic/metrics_profile.py)
        from bearing_lib.traffic.metrics_profile import profile_metrics

        return profile_metrics(ds, **params, **(metric_params or {}))
    from bearing_lib.data.timeunit import require_seconds

    require_seconds(ds, what="production trace")  # a clock in ms read as seconds would profile a 972 h trace
    if ds.kind not in ("requests", "rates"):
        raise ParameterError(
            f"{trace} holds {ds.kind} (load-test results); a traffic profile needs production requests or rates"
        )
    return profile_traffic(ds, **params)


__all__ = ["is_dataset_path", "read_mix_spec", "register"]
