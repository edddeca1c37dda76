"""read_yaml: one way to read user YAML/JSON files, errors naming the file."""

from __future__ import annotations

import pytest

from bearing_lib.common.errors import ParameterError, SLAParseError
from bearing_lib.common.yamlfile import read_yaml


def test_reads_yaml_and_json(tmp_path):
    y = tmp_path / "m.yaml"
    y.write_text("mixes:\n  - name: short\n    bounds: {input_tokens: [null, 1024]}\n")
    j = tmp_path / "w.json"
    j.write_text('{"weights": {"short": 0.75, "long": 0.25}}')
    assert read_yaml(y, "the mix file") == {"mixes": [{"name": "short", "bounds": {"input_tokens": [None, 1024]}}]}
    assert read_yaml(j, "the weights file") == {"weights": {"short": 0.75, "long": 0.25}}


def test_errors_name_the_file_and_use_the_callers_class(tmp_path):
    bad = tmp_path / "sla.yaml"
    bad.write_text("sla: [p99(ttft) <= 500ms\n")  # unclosed flow sequence
    with pytest.raises(SLAParseError, match=r"sla\.yaml: the SLA file is not valid YAML"):
        read_yaml(bad, "the SLA file", error=SLAParseError)
    with pytest.raises(ParameterError, match=r"missing\.yaml: cannot read the mix file"):
        read_yaml(tmp_path / "missing.yaml", "the mix file")
