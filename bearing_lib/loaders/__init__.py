"""Loaders: every input format bearing reads, registered on import.

Public entry points are :func:`load` (any kind) and :func:`load_trace` (per request).
Each format lives in its own module and registers a
:class:`~bearing_lib.loaders.registry.FormatSpec`; add a module import here to add one.
"""

import bearing_lib.loaders.aiperf  # noqa: F401  (registers)
import bearing_lib.loaders.aiperf_server_metrics  # noqa: F401  (registers)
import bearing_lib.loaders.genai_perf  # noqa: F401  (registers)
import bearing_lib.loaders.guidellm  # noqa: F401  (registers)
import bearing_lib.loaders.llmperf  # noqa: F401  (registers)
import bearing_lib.loaders.sglang  # noqa: F401  (registers)
import bearing_lib.loaders.vllm  # noqa: F401  (registers)
from bearing_lib.loaders import azure  # noqa: F401  (registers)
from bearing_lib.loaders import burstgpt as _burstgpt  # noqa: F401  (registers)
from bearing_lib.loaders import canonical as _canonical  # noqa: F401  (registers)
from bearing_lib.loaders import dcgm as _dcgm  # noqa: F401  (registers)
from bearing_lib.loaders import generic as _generic  # noqa: F401  (registers)
from bearing_lib.loaders import gpu_telemetry as _gpu_telemetry  # noqa: F401  (registers)
from bearing_lib.loaders import inference_perf as _inference_perf  # noqa: F401  (registers)
from bearing_lib.loaders import inference_perf_prometheus as _inference_perf_prometheus  # noqa: F401  (registers)
from bearing_lib.loaders import jmeter as _jmeter  # noqa: F401  (registers)
from bearing_lib.loaders import k6 as _k6  # noqa: F401  (registers)
from bearing_lib.loaders import llm_load_test as _llm_load_test  # noqa: F401  (registers)
from bearing_lib.loaders import lmbench as _lmbench  # noqa: F401  (registers)
from bearing_lib.loaders import locust as _locust  # noqa: F401  (registers)
from bearing_lib.loaders import mooncake as _mooncake  # noqa: F401  (registers)
from bearing_lib.loaders import prometheus as _prometheus  # noqa: F401  (registers)
from bearing_lib.loaders import servegen as _servegen  # noqa: F401  (registers)
from bearing_lib.loaders import vegeta as _vegeta  # noqa: F401  (registers)
from bearing_lib.loaders.registry import detect, formats, get_format, load, load_trace

__all__ = ["detect", "formats", "get_format", "load", "load_trace"]
