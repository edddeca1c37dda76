"""Reading the small YAML (or JSON) files users hand to bearing: SLAs, mixes, weights, mappings."""

from __future__ import annotations

from pathlib import Path

from bearing_lib.common.errors import BearingError, ParameterError


def read_yaml(path: str | Path, what: str, *, error: type[BearingError] = ParameterError) -> object:
    """Parse ``path`` as YAML (JSON is YAML); ``what`` names the file in errors (``"the SLA file"``).

    Raises ``error`` naming the path when the file cannot be read or is not valid YAML.
    """
    import yaml

    p = Path(path)
    try:
        return yaml.safe_load(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise error(f"{p}: cannot read {what} ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        raise error(f"{p}: {what} is not valid YAML/JSON ({exc})") from None
