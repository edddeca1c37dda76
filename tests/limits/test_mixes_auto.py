"""Automatic mix segmentation and mix files (SYNTHETIC request frames)."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from bearing_lib.common.errors import ParameterError
from bearing_lib.data.mixes import MixSpec, auto_mixes, load_mix_spec


def _frame(seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    n = 10_000
    # three populations: short chat (60 %), long RAG (25 %), cached agents (15 %)
    kind = rng.choice(3, size=n, p=[0.6, 0.25, 0.15])
    inp = np.where(kind == 0, rng.integers(50, 900, n), np.where(kind == 1, rng.integers(5000, 15000, n),
                                                                  rng.integers(1100, 3900, n)))
    out = rng.integers(20, 400, n)
    cached = np.where(kind == 2, (inp * 0.9).astype(int), 0)
    return pl.DataFrame({"input_tokens": inp, "output_tokens": out, "cached_tokens": cached})


def test_auto_mixes_min_share_and_cover():
    f = _frame()
    spec = auto_mixes(f, min_share=0.1)
    labelled = spec.assign(f)
    shares = labelled.group_by("mix").len().with_columns(pl.col("len") / f.height)
    assert "other" not in shares["mix"].to_list()  # open outer bins: every request has a mix
    assert shares["len"].min() >= 0.1
    # the input-length split recovers the three populations' boundaries at powers of 4 (1024, 4096)
    assert spec.mixes[0].bounds["input_tokens"] == (-math.inf, 1024.0)
    counts = dict(labelled.group_by("mix").len().iter_rows())
    short = sum(v for k, v in counts.items() if k.startswith("in<1k"))
    assert short == int((f["input_tokens"] < 1024).sum())


def test_auto_mixes_deterministic_and_single_when_uniform():
    f = _frame(1)
    assert auto_mixes(f, 0.1).to_dict() == auto_mixes(f, 0.1).to_dict()
    one = pl.DataFrame({"input_tokens": [100] * 50, "output_tokens": [50] * 50, "cached_tokens": [None] * 50},
                       schema={"input_tokens": pl.Int64, "output_tokens": pl.Int64, "cached_tokens": pl.Int64})
    assert auto_mixes(one, 0.1) == MixSpec.single()
    with pytest.raises(ParameterError, match="min_share"):
        auto_mixes(f, 0.0)


def test_mix_file_roundtrip(tmp_path):
    p = tmp_path / "mixes.yaml"
    p.write_text("mixes:\n  - name: chat\n    bounds: {input_tokens: [null, 1024]}\n"
                 "  - name: rag\n    bounds: {input_tokens: [1024, null]}\n")
    spec = load_mix_spec(p)
    assert spec.names() == ["chat", "rag"]
    assert spec.mixes[1].bounds["input_tokens"] == (1024.0, math.inf)
    assert load_mix_spec({"a": {"output_tokens": [0, 100]}}).names() == ["a"]
    bad = tmp_path / "bad.yaml"
    bad.write_text("- name: x\n  bounds: {input_tokenz: [0, 1]}\n")
    with pytest.raises(ParameterError, match=r"bad\.yaml: mix 'x': unknown dimension 'input_tokenz'"):
        load_mix_spec(bad)
    dup = tmp_path / "dup.yaml"
    dup.write_text("- {name: x, bounds: {}}\n- {name: x, bounds: {}}\n")
    with pytest.raises(ParameterError, match="unique"):
        load_mix_spec(dup)


def test_auto_mixes_leave_every_mix_enough_requests_for_every_clause():
    """A P95 needs 72 requests per step and mix (its CI's order statistics), an error_rate <= 1%
    clause 100 (to show a rate within 1%). With ~150 requests per step the P95 alone allows mixes
    of >= 48% (at most two); adding the error-rate clause needs 67% per mix: one mix, said so."""
    import numpy as np
    import polars as pl

    from bearing_lib.limits.curves import min_n_supported
    from bearing_lib.limits.fit import _auto_mix_floor, fit_limits
    from bearing_lib.limits.sla import parse_sla
    from tests.limits.synth import make_trace, mm1_frame

    assert min_n_supported(0.95) == 72
    f = mm1_frame([0.6, 0.6, 0.6], mu_rps=10, step_s=200, seed=4)
    rng = np.random.default_rng(0)
    f = f.with_columns(pl.Series("input_tokens", rng.choice([10, 5000], size=f.height)).cast(pl.Int64))
    tr = make_trace(f)
    typical = int(np.median(tr.frame.group_by("run_id", "step").len()["len"].to_numpy()))
    assert 100 < typical < 144  # so 72/typical <= 0.5 < 100/typical
    assert _auto_mix_floor([tr], parse_sla("p95(latency) <= 2s")) == (72, typical)
    assert _auto_mix_floor([tr], parse_sla("p95(latency) <= 2s and error_rate <= 1%")) == (100, typical)
    only_p95 = fit_limits(tr, "p95(latency) <= 2s", n_boot=0)
    assert 1 <= len(only_p95.mixes) <= 2
    both = fit_limits(tr, "p95(latency) <= 2s and error_rate <= 1%", n_boot=0)
    assert [m.mix.name for m in both.mixes] == ["all"]
    assert any(n.startswith(f"mixes=auto gave one mix: a typical step holds {typical} requests") for n in both.notes)
