"""What a deployment is: its identity from the files, the folder names and the analyst's statements.

Order of authority (each field records where it came from in :attr:`Identity.stated`): the
analyst (``--label NAME=key=value,...``, ``--hardware``, ``--gpus``) over the load test's own
files or the limits JSON's conditions (model, hardware, instances) over the deployment's folder
and file names (``tp4_pp2``, ``quantization``, ``chunking_and_prefix_caching``...). The names are
read only from the deployment's own folder and files, never from the folders above it (those
name the tool or the data set, not the deployment). A field nobody states stays None: unknown,
never taken as equal to another deployment's value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from bearing_lib.common.errors import ParameterError
from bearing_lib.compare.result import Identity

NAME_OPTIONS: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (re.compile(r"quanti[sz]|fp8|awq|gptq|int8|int4"), "quantisation", "yes (from the name)"),
    (re.compile(r"chunk"), "chunked_prefill", "on"),
    (re.compile(r"prefix"), "prefix_caching", "on"),
    (re.compile(r"eagle|specul|spec_dec|medusa"), "speculative_decoding", "on"),
    (re.compile(r"v0_engine|v0engine"), "engine_generation", "V0"),
    (re.compile(r"batch_size|max_num_seqs"), "batch_size", "changed (from the name)"),
    (re.compile(r"no_ib"), "interconnect", "no InfiniBand"),
    (re.compile(r"(?<![a-z])ib(?![a-z])|infiniband|rdma"), "interconnect", "InfiniBand"),
)
"""Words in a deployment's folder or file names that name a serving option (regex, option, value)."""

ENGINES = ("vllm", "sglang", "tgi", "trtllm", "tensorrt-llm", "llm-d", "lmdeploy", "triton")
_TP = re.compile(r"(?:^|[^a-z])tp[_-]?(\d+)")
_PP = re.compile(r"(?:^|[^a-z])pp[_-]?(\d+)")

INT_FIELDS = ("gpus", "instances", "tensor_parallel", "pipeline_parallel")
STR_FIELDS = ("model", "engine", "engine_version", "hardware")
ALIASES = {"tp": "tensor_parallel", "pp": "pipeline_parallel", "replicas": "instances", "version": "engine_version"}


def _names(paths: list[str]) -> list[str]:
    """The deployment's own folder and file names, lower case (not the folders above it)."""
    out = []
    for p in paths:
        path = Path(p)
        out.append(path.name.lower())
        if path.is_dir():
            out.extend(c.name.lower() for c in sorted(path.iterdir())[:200])
    return out


def from_names(ident: Identity, paths: list[str]) -> None:
    """Fill parallelism, engine and options that the deployment's folder and file names state."""
    names = _names(paths)
    folder = names[0] if names else ""
    for key, rx in (("tensor_parallel", _TP), ("pipeline_parallel", _PP)):
        found = {int(m.group(1)) for n in names for m in [rx.search(n)] if m}
        if getattr(ident, key) is None and len(found) == 1:
            setattr(ident, key, found.pop())
            ident.stated[key] = "path"
    if ident.engine is None:
        hits = [e for e in ENGINES if re.search(rf"(?:^|[^a-z]){re.escape(e)}(?:[^a-z]|$)", folder)]
        if len(hits) == 1:
            ident.engine = hits[0]
            ident.stated["engine"] = "path"
    for rx, option, value in NAME_OPTIONS:
        if option not in ident.options and rx.search(folder):
            ident.options[option] = value
            ident.stated[f"options.{option}"] = "path"


def derive_gpus(ident: Identity) -> None:
    """GPUs = tensor × pipeline parallel × instances when those are known and the GPU count is not."""
    if ident.gpus is None and ident.tensor_parallel and ident.pipeline_parallel:
        ident.gpus = ident.tensor_parallel * ident.pipeline_parallel * ident.instances
        ident.stated["gpus"] = "tensor × pipeline parallel × instances"


def parse_label(text: str) -> tuple[str, dict[str, str]]:
    """``NAME=key=value,key=value`` → (NAME, {key: value}); keys as :class:`Identity` fields or options.

    >>> parse_label("a=model=llama,tp=8,quantization=fp8")
    ('a', {'model': 'llama', 'tp': '8', 'quantization': 'fp8'})
    """
    name, sep, rest = text.partition("=")
    if not sep or not name or "=" not in rest:
        raise ParameterError(f"--label {text!r}: expected NAME=key=value[,key=value...], e.g. "
                             "--label tp8=model=meta-llama/Llama-3.3-70B-Instruct,hardware=8xA100-80GB,gpus=8")
    out: dict[str, str] = {}
    for item in rest.split(","):
        k, s, v = item.partition("=")
        if not s or not k.strip():
            raise ParameterError(f"--label {text!r}: {item!r} is not key=value")
        out[k.strip()] = v.strip()
    return name, out


def apply_label(ident: Identity, items: dict[str, str], *, flag: str = "--label") -> None:
    """The analyst's statements win over files and names."""
    known = {f.name for f in fields(Identity)}
    for raw_key, value in items.items():
        key = ALIASES.get(raw_key, raw_key)
        if key in INT_FIELDS:
            try:
                n = int(value)
            except ValueError:
                raise ParameterError(f"{flag} {ident.name}: {raw_key} must be an integer, got {value!r}") from None
            if n < 1:
                raise ParameterError(f"{flag} {ident.name}: {raw_key} must be >= 1, got {n}")
            setattr(ident, key, n)
        elif key in STR_FIELDS:
            setattr(ident, key, value)
        elif key in known:
            raise ParameterError(f"{flag} {ident.name}: {raw_key} cannot be stated")
        else:
            ident.options[key] = value
            key = f"options.{key}"
        ident.stated[key] = flag


DEPLOYMENT_KEYS = ("model", "hardware", "engine", "engine_version", "instances", "sla", "tier", "load_test_tools")
"""What must be the same for two measurements to be compared as one deployment's (the report's identity, "what
changed" and the weekly comparison): model, hardware, engine and its version, replicas (instances), SLA, tier and
the load-test tools."""


def from_limits(result: Any, *, name: str = "") -> Identity:
    """The deployment a limits result measured (a :class:`~bearing_lib.limits.result.LimitsResult`): model,
    hardware and instances from its conditions (``stated`` ``files``), engine and parallelism from the load
    test's own folder and file names (:func:`from_names`). Nothing else is assumed: a field nobody states
    stays None (instances too: unknown, not 1)."""
    cond = result.conditions
    ident = Identity(name=name or "limits", sources=[x.path for x in cond.sources])
    models = cond.model if isinstance(cond.model, list) else [cond.model]
    models = sorted({str(m) for m in models if m})
    if len(models) == 1:
        ident.model, ident.stated["model"] = models[0], "files"
    if cond.hardware:
        ident.hardware, ident.stated["hardware"] = str(cond.hardware), "files"
    if cond.instances:
        ident.instances, ident.stated["instances"] = int(cond.instances), "files"
    for key in ("engine", "engine_version"):  # stated in the limits' conditions (``conditions.engine`` ...)
        v = cond.extra.get(key)
        # a stated value (``engine: vllm``), not where bearing's own work ran (an EngineRun under "engine")
        if isinstance(v, str | int | float) and v != "":
            setattr(ident, key, str(v))
            ident.stated[key] = "files"
    # a load-test tool's version is not the engine's: the engine version stays unknown unless stated
    from_names(ident, [x.path for x in cond.sources if x.path])
    return ident


def identity_fields(ident: Identity) -> dict[str, str | int | None]:
    """The deployment fields of :data:`DEPLOYMENT_KEYS` an :class:`Identity` holds (None = unknown; instances
    None unless stated)."""
    return {"model": ident.model, "hardware": ident.hardware, "engine": ident.engine,
            "engine_version": ident.engine_version,
            "instances": ident.instances if "instances" in ident.stated and not
            str(ident.stated["instances"]).startswith("not stated") else None}


@dataclass
class Comparability:
    """Whether two deployments' identities allow a comparison: the fields that differ (both stated, not
    equal) and the fields unknown on one side or both (never taken as equal)."""

    differ: list[str]
    unknown: list[str]

    @property
    def comparable(self) -> bool:
        """Like with like: every field stated on both sides and equal."""
        return not self.differ and not self.unknown

    @property
    def statement(self) -> str:
        if self.differ:
            return "not comparable: " + "; ".join(self.differ)
        if self.unknown:
            return ("comparability unknown: " + ", ".join(self.unknown) + " not stated, so a change of deployment "
                    "cannot be told from a change of capacity")
        return "comparable: the same deployment and question on every field"


def _word(key: str) -> str:
    return {"load_test_tools": "load-test tools", "engine_version": "engine version",
            "instances": "instances (replicas)"}.get(key, key.replace("_", " "))


def comparability(previous: Mapping[str, Any], current: Mapping[str, Any],
                  keys: Sequence[str] = DEPLOYMENT_KEYS) -> Comparability:
    """Compare two identities field by field over ``keys``: a field stated on both sides and different is a
    difference; a field missing or None on either side is unknown (``"model not stated in the previous
    report"``), never equal.

    >>> comparability({"model": "a", "engine": None}, {"model": "a", "engine": None}, ["model", "engine"]).unknown
    ['engine (not stated in either)']
    >>> comparability({"engine": "llm-d"}, {"engine": "vllm"}, ["engine"]).differ
    ['engine llm-d → vllm']
    """
    differ, unknown = [], []
    for k in keys:
        a, b = previous.get(k), current.get(k)
        if a is None and b is None:
            unknown.append(f"{_word(k)} (not stated in either)")
        elif a is None or b is None:
            unknown.append(f"{_word(k)} (not stated in the {'previous' if a is None else 'current'} one; "
                           f"{'now' if a is None else 'before'} {b if a is None else a})")
        elif str(a) != str(b):
            differ.append(f"{_word(k)} {a} → {b}")
    return Comparability(differ, unknown)


POOL_KEYS = ("model", "engine", "tool")
"""What runs pooled into one limit (``bearing limits --pool``) must share: the model, the engine and the tool."""


def trace_identity(trace: Any) -> dict[str, str | None]:
    """The deployment a load-test trace (a :class:`~bearing_lib.data.trace.RequestTrace`) names: its one
    model (the ``model`` column; None when empty or several), the engine from its own folder and file names
    (:func:`from_names`) and the tool that wrote it."""
    models: list[str] = []
    if "model" in trace.frame.columns:
        models = sorted({str(m) for m in trace.frame["model"].drop_nulls().unique().to_list() if str(m)})
    prov = trace.provenance
    ident = Identity(name=str(prov.source))
    from_names(ident, [str(prov.source)])
    return {"model": models[0] if len(models) == 1 else None, "engine": ident.engine, "tool": prov.tool or None}


def check_pool(traces: Sequence[Any]) -> list[str]:
    """Refuse to pool runs of different deployments; return what could not be checked.

    Raises :class:`ParameterError` when two traces state different models, engines or tools (a repeat of one
    deployment is pooled, never two deployments); returns one sentence per field unknown on a side (pooled,
    but said: unknown is not equal)."""
    idents = [(str(t.provenance.source), trace_identity(t)) for t in traces]
    first_src, first = idents[0]
    differ: list[str] = []
    unknown: set[str] = set()
    for src, ident in idents[1:]:
        c = comparability(first, ident, POOL_KEYS)
        differ += [f"{d} ({first_src} vs {src})" for d in c.differ]
        unknown |= {u.split(" (")[0] for u in c.unknown}
    if differ:
        raise ParameterError("--pool pools repeats and follow-ups of one deployment; these runs differ: "
                             + "; ".join(differ) + ". Fit them separately (and compare them with bearing compare)")
    return [f"pooled runs: {', '.join(sorted(unknown))} not stated in every run, so the runs are taken to be one "
            "deployment without proof"] if unknown else []


__all__ = [
    "DEPLOYMENT_KEYS",
    "ENGINES",
    "NAME_OPTIONS",
    "POOL_KEYS",
    "Comparability",
    "apply_label",
    "check_pool",
    "comparability",
    "derive_gpus",
    "from_limits",
    "from_names",
    "identity_fields",
    "parse_label",
    "trace_identity",
]
