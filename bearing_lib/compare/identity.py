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
from dataclasses import fields
from pathlib import Path

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


__all__ = ["ENGINES", "NAME_OPTIONS", "apply_label", "derive_gpus", "from_names", "parse_label"]
