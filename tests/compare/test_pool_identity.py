"""``--pool`` pools repeats of one deployment only (issue #25 item 4): runs that state different models (or
engines, tools) are refused; a field no run states is pooled but said (unknown is never equal). ``bearing
limits --pool`` calls :func:`check_pool` on its request traces before fitting (the limits wing may not import
the compare wing) and adds what could not be checked to the limits' notes; the CLI case is below."""

from __future__ import annotations

import dataclasses

import polars as pl
import pytest

from bearing_lib.common.errors import ParameterError
from bearing_lib.compare.identity import check_pool, trace_identity
from tests.limits.synth import make_trace, mm1_frame

RATES = [2.0, 4.0, 6.0]


def _trace(seed: int, run: str, model: str | None, source: str = "SYNTHETIC"):
    f = mm1_frame(RATES, mu_rps=10.0, step_s=100.0, seed=seed, run_id=run)
    if model is not None:
        f = f.with_columns(pl.lit(model).alias("model"))
    t = make_trace(f)
    return dataclasses.replace(t, provenance=dataclasses.replace(t.provenance, source=source))


def test_trace_identity_reads_the_model_column_the_folder_and_the_tool():
    t = _trace(1, "a", "llama-3-8b", source="/data/llm-d-8b-run1")
    assert trace_identity(t) == {"model": "llama-3-8b", "engine": "llm-d", "tool": "tests.limits.synth"}
    assert trace_identity(_trace(1, "a", None))["model"] is None


def test_two_models_are_never_pooled():
    a, b = _trace(1, "a", "llama-3-8b"), _trace(2, "b", "llama-3-70b")
    with pytest.raises(ParameterError, match=r"these runs differ: model llama-3-8b → llama-3-70b"):
        check_pool([a, b])
    v, w = _trace(1, "a", "m", source="/x/vllm-run"), _trace(2, "b", "m", source="/x/llm-d-run")
    with pytest.raises(ParameterError, match=r"engine vllm → llm-d"):
        check_pool([v, w])


def test_unknown_fields_are_pooled_but_said():
    a, b = _trace(1, "a", None), _trace(2, "b", None)
    assert check_pool([a, b]) == ["pooled runs: engine, model not stated in every run, so the runs are taken to be "
                                  "one deployment without proof"]
    same = check_pool([_trace(1, "a", "m", source="/x/vllm-1"), _trace(2, "b", "m", source="/x/vllm-2")])
    assert same == []


def test_the_cli_refuses_to_pool_two_models(tmp_path):
    from typer.testing import CliRunner

    from bearing_lib.cli.main import app
    from bearing_lib.loaders.canonical import write_trace

    paths = []
    for seed, model in ((1, "llama-3-8b"), (2, "llama-3-70b")):
        p = tmp_path / f"run-{model}.parquet"
        write_trace(_trace(seed, f"r{seed}", model), p)
        paths.append(str(p))
    res = CliRunner().invoke(app, ["limits", *paths, "--pool", "--sla", "p99(latency) <= 1s", "--mixes", "none",
                                   "--n-boot", "0", "--json", str(tmp_path / "l.json")])
    assert res.exit_code == 1, res.output
    assert "these runs differ: model llama-3-8b → llama-3-70b" in res.output
    assert not (tmp_path / "l.json").exists()
