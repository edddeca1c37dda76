"""bearing's version, read once from the installed package's metadata.

Inside the library import it from here (``from bearing_lib.common.version import __version__``),
never from ``bearing_lib`` itself: the package's front door imports lazily and must not be
pulled in by its own modules.

>>> import re
>>> bool(re.fullmatch(r"\\d+\\.\\d+\\.\\d+.*", __version__))
True
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

DISTRIBUTION = "bearing"

try:
    __version__: str = version(DISTRIBUTION)
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"

__all__ = ["DISTRIBUTION", "__version__"]
