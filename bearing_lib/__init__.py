"""bearing: the bearing capacity of AI inference services.

Data flows one way: load (``bearing_lib.loaders``) → canonical request trace
(``bearing_lib.data.trace``) or load-point table (``bearing_lib.data.loadpoints``) → curves,
profiles → limits and plan → report model → HTML.
"""

from bearing_lib.common.errors import (
    BadValueError,
    BearingError,
    FormatDetectionError,
    InputError,
    InsufficientDataError,
    ParameterError,
    SchemaError,
    SLAParseError,
    UnsupportedVersionError,
)
from bearing_lib.loaders import load, load_trace

__version__ = "0.1.0"

__all__ = [
    "BadValueError",
    "BearingError",
    "FormatDetectionError",
    "InputError",
    "InsufficientDataError",
    "ParameterError",
    "SLAParseError",
    "SchemaError",
    "UnsupportedVersionError",
    "__version__",
    "load",
    "load_trace",
]
