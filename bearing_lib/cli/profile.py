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


def register(app: typer.Typer) -> None:
    @app.command("profile")
    def profile_cmd(
        trace: Path = typer.Argument(..., help="A production trace (per request) or rate windows (e.g. ServeGen)."),
        json_out: Path = typer.Option(..., "--json", help="Write the profile JSON here."),
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
    ) -> None:
        """Profile production traffic: per-minute rates, cycles, bursts, mixes, target load, SLO budget."""
        from bearing_lib.loaders import load
        from bearing_lib.traffic.profile import profile_traffic

        with bearing_errors():
            if json_out.exists() and not force:
                raise ParameterError(f"{json_out} exists; pass --force to overwrite it")
            spec = read_mix_spec(mixes)
            options = merge_loader_options(parse_loader_options(option), mapping=mapping)
            fmt = format or ("generic" if mapping is not None else None)
            ds = load(trace, format=fmt, **options)
            if ds.kind not in ("requests", "rates"):
                raise ParameterError(
                    f"{trace} holds {ds.kind} (load-test results); a traffic profile needs production requests or rates"
                )
            prof = profile_traffic(ds, mix_spec=spec, quantile_level=quantile, growth=growth, burst_k=burst_k,
                                   slo_objective=slo)
            json_out.parent.mkdir(parents=True, exist_ok=True)
            json_out.write_text(json.dumps(_finite(prof.to_dict()), indent=1, default=_json_default) + "\n")
            for line in prof.summary_lines():
                typer.echo(line)
            typer.echo(f"wrote {json_out}")


__all__ = ["read_mix_spec", "register"]
