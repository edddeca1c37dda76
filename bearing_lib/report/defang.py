"""Untrusted text in the report is never a link: every URL scheme defanged.

Strings that reach the HTML or a chart spec come from users' files (model names, mix names,
paths, notes): :func:`defang` makes any URL in them readable but neither clickable nor
fetchable, and :func:`defang_tree` applies it to a whole JSON-shaped value.
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any

# Any scheme followed by "//" (http, https, ftp, file, ws, wss, s3, hxxp ...: RFC 3986
# scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )), and the schemes that run or
# carry content without "//" (javascript:, vbscript:, data:<type>/, mailto:, tel:,
# blob:). Hand-written: the defanging libraries (ioc-fanger, defang) cover http/https/ftp
# and domains, not the script schemes, and bring dependencies for what is one regex.
_URL = re.compile(r"(?<![A-Za-z0-9+.\-])([A-Za-z][A-Za-z0-9+.\-]{0,31}):(\s*/\s*/)")
_SCRIPT_SCHEME = re.compile(
    r"(?<![A-Za-z0-9+.\-])(javascript|vbscript|livescript|mailto|tel|blob|data(?=\s*:\s*[\w.+-]+/))(\s*):", re.I
)


def defang(text: str) -> str:
    """``http://x`` → ``http[:]//x``, ``javascript:x`` → ``javascript[:]x``: readable, not a link, not fetchable.

    Every scheme is defanged (``https``, ``ftp``, ``file``, ``ws`` ... and the script schemes).

    >>> defang("see https://a.example and FTP://b, javascript:alert(1), data:text/html,x")
    'see https[:]//a.example and FTP[:]//b, javascript[:]alert(1), data[:]text/html,x'
    """
    return _SCRIPT_SCHEME.sub(r"\1\2[:]", _URL.sub(r"\1[:]\2", text))



def defang_tree(value: Any) -> Any:
    """Every string in ``value`` (dataclasses, dicts, lists) defanged; non-finite floats as None."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    if isinstance(value, str):
        return defang(value)
    if isinstance(value, dict):
        return {defang(str(k)): defang_tree(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [defang_tree(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


__all__ = ["defang", "defang_tree"]
