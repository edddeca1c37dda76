"""Request mixes the twin replays: a trace's empirical lengths, or a user's lognormal mix.

A mix is a set of (input, output, cached) token triples, resampled with replacement.
:func:`from_trace` takes them from a production trace (its length distribution and its
prefix-cache hits as recorded); :func:`load_mix_file` reads user-given mixes::

    chat:                       # one entry per mix
      input_tokens:  {median: 350, sigma: 0.8, min: 16, max: 4096}
      output_tokens: {median: 180, sigma: 0.7, min: 8, max: 1024}
      cached_tokens: 0          # tokens served from the prefix cache when a request hits
      cache_hit: 0.0            # fraction of requests that hit
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bearing_lib.common.errors import InputError, InsufficientDataError


@dataclass(frozen=True)
class RequestMix:
    """Token triples to resample, with a name for the report."""

    name: str
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    cached_tokens: np.ndarray

    def __post_init__(self) -> None:
        if self.input_tokens.size == 0:
            raise InsufficientDataError(f"mix {self.name!r} has no requests with input and output token counts")

    @property
    def size(self) -> int:
        return int(self.input_tokens.size)

    def sample(self, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        i = rng.integers(0, self.size, n)
        return self.input_tokens[i], self.output_tokens[i], self.cached_tokens[i]

    def scaled_prompts(self, factor: float) -> RequestMix:
        """Prompts ``factor`` times longer (cached prefix unchanged, capped at the prompt)."""
        if not (factor > 0 and math.isfinite(factor)):
            from bearing_lib.common.errors import ParameterError

            raise ParameterError(f"--prompt-scale must be a positive number, got {factor}")
        if factor == 1.0:
            return self
        inp = np.maximum(np.rint(self.input_tokens * factor), 1.0)
        return RequestMix(f"{self.name} (prompts ×{factor:g})", inp, self.output_tokens,
                          np.minimum(self.cached_tokens, inp))

    def describe(self) -> dict[str, float]:
        return {
            "requests": float(self.size),
            "input_p50": float(np.median(self.input_tokens)),
            "output_p50": float(np.median(self.output_tokens)),
            "cache_hit": float(np.mean(self.cached_tokens > 0)),
            "cached_share": float(self.cached_tokens.sum() / max(self.input_tokens.sum(), 1.0)),
        }


def from_arrays(name: str, inp, out, cached=None) -> RequestMix:
    i = np.asarray(inp, dtype=float)
    o = np.asarray(out, dtype=float)
    c = np.zeros(i.size) if cached is None else np.nan_to_num(np.asarray(cached, dtype=float))
    keep = np.isfinite(i) & np.isfinite(o) & (i >= 0) & (o >= 1)
    return RequestMix(name, i[keep], o[keep], np.minimum(c[keep], i[keep]))


def from_trace(trace, name: str | None = None) -> RequestMix:
    """The length distribution and cache hits of a (production) trace."""
    f = trace.frame if hasattr(trace, "frame") else trace
    src = getattr(getattr(trace, "provenance", None), "source", "trace")
    for col in ("input_tokens", "output_tokens"):
        if col not in f.columns or f[col].null_count() == f.height:
            raise InsufficientDataError(f"{src}: the twin needs per-request {col} to build a mix; found none")
    cached = f["cached_tokens"].to_numpy() if "cached_tokens" in f.columns else None
    return from_arrays(name or f"production mix ({Path(str(src)).name})", f["input_tokens"].to_numpy(),
                       f["output_tokens"].to_numpy(), cached)


@dataclass
class LengthSpec:
    median: float
    sigma: float
    min: float = 1
    max: float = 1_000_000


@dataclass
class SyntheticMixSpec:
    """A synthetic mix of a twin mixes file: lognormal input and output lengths and a cache-hit share (not
    :class:`bearing_lib.data.mixes.MixSpec`, which selects a test's or a trace's requests into mixes)."""

    input_tokens: LengthSpec
    output_tokens: LengthSpec
    cached_tokens: float = 0
    cache_hit: float = 0.0


def from_spec(name: str, spec: SyntheticMixSpec, n: int = 20_000, seed: int = 0) -> RequestMix:
    """A lognormal mix (median, σ of log, clipped to [min, max]) drawn as ``n`` requests."""
    rng = np.random.default_rng(seed)

    def draw(s: LengthSpec) -> np.ndarray:
        return np.clip(np.rint(np.exp(rng.normal(math.log(s.median), s.sigma, n))), s.min, s.max)

    inp, out = draw(spec.input_tokens), draw(spec.output_tokens)
    hit = rng.random(n) < spec.cache_hit
    cached = np.where(hit, np.minimum(spec.cached_tokens, inp - 1), 0.0)
    return RequestMix(name, inp, np.maximum(out, 1.0), cached)


def load_mix_file(path: str | Path) -> list[RequestMix]:
    """The mixes of a YAML/JSON file (module docstring); one error lists every problem."""
    from bearing_lib.common.schema import parse
    from bearing_lib.common.yamlfile import read_yaml

    p = Path(path)
    doc = read_yaml(p, "the twin mix file", error=InputError)
    specs = parse(dict[str, SyntheticMixSpec], doc, what=f"{p}: twin mixes")
    bad = [f"{k}: {w} median must be > 0 and sigma >= 0" for k, s in specs.items()
           for w, ls in (("input_tokens", s.input_tokens), ("output_tokens", s.output_tokens))
           if not (ls.median > 0 and ls.sigma >= 0 and ls.min <= ls.max)]
    bad += [f"{k}: cache_hit must be in [0, 1]" for k, s in specs.items() if not 0 <= s.cache_hit <= 1]
    if bad:
        raise InputError("; ".join(bad), path=p)
    if not specs:
        raise InputError("no mix defined (expected name: {input_tokens: ..., output_tokens: ...})", path=p)
    return [from_spec(k, s) for k, s in specs.items()]


__all__ = ["RequestMix", "from_arrays", "from_spec", "from_trace", "load_mix_file"]
