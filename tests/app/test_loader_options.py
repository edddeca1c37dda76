"""The report's loader settings as one typed value (``bearing_lib.app.loader_options``): checked once where
the notebook parameters enter, a wrong one named with what it expects; the loader reads what it says."""

from __future__ import annotations

import csv
import dataclasses
import datetime as dt

import pytest

from bearing_lib.app import pipeline
from bearing_lib.app.loader_options import LOADTEST, PRODUCTION, LoaderOptions
from bearing_lib.common.errors import ParameterError
from tests.conftest import ROOT

AZURE = ROOT / "data/traces/azure-llm-inference-2023/AzureLLMInferenceTrace_conv.csv"
MAPPING = ("columns: {start_s: TIMESTAMP, input_tokens: ContextTokens, output_tokens: GeneratedTokens}\n"
           "units: {TIMESTAMP: iso8601}\n")


def test_a_mapping_implies_generic_and_reaches_the_loader_as_its_option(tmp_path):
    m = tmp_path / "m.yaml"
    how = LoaderOptions.from_parameters("", str(m), {"skip_bad_lines": True}, names=PRODUCTION)
    assert how == LoaderOptions(format="generic", mapping=m, options={"skip_bad_lines": True})
    assert how.loader_kwargs() == {"skip_bad_lines": True, "mapping": str(m)}
    assert how.given and not LoaderOptions.from_parameters("", "", None).given
    assert LoaderOptions.from_parameters(" vllm ", None, {}).format == "vllm"  # empty and blank are "not given"


def test_the_value_is_frozen_options_included():
    how = LoaderOptions.from_parameters("vllm", "", {"n": 5})
    with pytest.raises(dataclasses.FrozenInstanceError):
        how.format = "sglang"  # type: ignore[misc]
    with pytest.raises(TypeError):
        how.options["n"] = 6  # type: ignore[index]
    given = {"n": 5}
    held = LoaderOptions(options=given)
    given["n"] = 7  # the caller's dict changing later does not change what was checked
    assert dict(held.options) == {"n": 5}


@pytest.mark.parametrize(("values", "names", "message"), [
    ((5, "", None), LOADTEST, "parameter 'format': expected a format name, e.g. vllm (empty: detected), got a number"),
    (("", ["m.yaml"], None), PRODUCTION, "parameter 'production_mapping': expected the path of a column-mapping YAML "
                                         "file, got a list"),
    (("", "", ["time_unit=ms"]), PRODUCTION, "parameter 'production_options': expected a mapping of option: value"),
    (("", "", "time_unit=ms"), LOADTEST, "parameter 'options': expected a mapping of option: value"),
    (("", "", {"time-unit": "ms"}), LOADTEST, "parameter 'options': option name 'time-unit' is not an option name"),
    (("", "m.yaml", {"mapping": "n.yaml"}), PRODUCTION, "given twice: as parameter 'production_mapping' and as "
                                                        "'mapping' inside parameter 'production_options'"),
])
def test_a_wrong_parameter_is_named_with_what_it_expects(values, names, message):
    with pytest.raises(ParameterError) as e:
        LoaderOptions.from_parameters(*values, names=names)
    assert message in str(e.value)


def test_the_runner_refuses_wrong_loader_options_before_any_kernel(monkeypatch):
    """``check_inputs`` (the runner's check before a notebook starts) names the parameter; nothing is loaded."""
    monkeypatch.setattr(pipeline, "read_input", lambda *a, **k: pytest.fail("loaded"))
    with pytest.raises(ParameterError, match="parameter 'production_options': expected a mapping.*got a list"):
        pipeline.check_inputs({"production_trace": str(AZURE), "production_options": ["time_unit=ms"]})
    with pytest.raises(ParameterError, match="parameter 'format': expected a format name"):
        pipeline.check_inputs({"loadtest": str(AZURE), "format": 3})


def test_load_production_reads_through_the_mapping_what_the_raw_file_holds(tmp_path):
    """The Azure conversation trace read with a column mapping (generic format): the request count, the
    token columns and the first start time equal the raw CSV's, read with the csv module."""
    mapping = tmp_path / "azure.yaml"
    mapping.write_text(MAPPING)
    trace = pipeline.load_production(AZURE, mapping=str(mapping))
    with AZURE.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    frame = trace.frame
    assert trace.provenance.format == "generic"
    assert frame.height == len(rows)
    assert frame["input_tokens"].sum() == sum(int(r["ContextTokens"]) for r in rows)
    assert frame["output_tokens"].sum() == sum(int(r["GeneratedTokens"]) for r in rows)
    first = min(dt.datetime.fromisoformat(r["TIMESTAMP"].strip()[:26]).replace(tzinfo=dt.UTC) for r in rows)
    assert frame["start_s"].min() == pytest.approx(first.timestamp(), abs=1e-3)
    with pytest.raises(ParameterError, match="parameter 'production_options'"):
        pipeline.load_production(AZURE, options=["time_unit=ms"])  # type: ignore[arg-type]
