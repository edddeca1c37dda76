"""The loader registry: which formats bearing reads, how it recognises them.

Each format module registers a :class:`FormatSpec` with :func:`register`. :func:`load`
asks every spec's ``sniff`` whether it recognises the input; exactly one must. When
none or several do, :class:`FormatDetectionError` says what bearing saw and what each
candidate needs, and ``format=`` picks one explicitly.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

import polars as pl

from bearing_lib.common.errors import BearingError, FormatDetectionError, InputError, ParameterError
from bearing_lib.data.provenance import Provenance
from bearing_lib.loaders.source import Source

DatasetKind = Literal["requests", "loadpoints", "rates"]


class Dataset(Protocol):
    """What every loader returns: a frame of one canonical kind, and its provenance."""

    kind: str
    frame: pl.DataFrame
    provenance: Provenance


@dataclass(frozen=True)
class FormatSpec:
    """One input format.

    ``sniff(source)`` must be cheap (look at ``source.head`` / names) and must not
    raise; ``load(source, **options)`` returns a :class:`Dataset`. ``needs`` is the
    sentence shown when detection fails ("a CSV with columns TIMESTAMP, ContextTokens,
    GeneratedTokens"). ``version(source)`` optionally names the tool version.
    """

    name: str
    tool: str
    kind: DatasetKind
    needs: str
    sniff: Callable[[Source], bool]
    load: Callable[..., Dataset]
    version: Callable[[Source], str | None] | None = None


_REGISTRY: dict[str, FormatSpec] = {}


def register(spec: FormatSpec) -> FormatSpec:
    """Add a format; names are unique."""
    if spec.name in _REGISTRY:
        raise ValueError(f"format {spec.name!r} registered twice")
    _REGISTRY[spec.name] = spec
    return spec


def formats() -> list[FormatSpec]:
    """All registered formats, in registration order."""
    _ensure_loaded()
    return list(_REGISTRY.values())


def get_format(name: str) -> FormatSpec:
    """The format called ``name``; :class:`ParameterError` lists the known ones otherwise."""
    _ensure_loaded()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ParameterError(
            f"unknown format {name!r}; known formats: {', '.join(sorted(_REGISTRY))}"
        ) from None


def _ensure_loaded() -> None:
    # Importing the package registers every built-in format.
    import bearing_lib.loaders  # noqa: F401


def _safe_sniff(spec: FormatSpec, source: Source) -> bool:
    try:
        return bool(spec.sniff(source))
    except Exception:  # a sniffer that trips over an odd file simply does not match
        return False


def detect(path: str | Path | Source) -> FormatSpec:
    """The one format that recognises ``path``.

    Raises :class:`FormatDetectionError` when none or several do.
    """
    source = path if isinstance(path, Source) else Source(path)
    if source.is_dir and not any(p.name[:1] != "." for p in source.path.iterdir()):
        raise FormatDetectionError(
            "the folder is empty; expected the files of one load test or trace (CSV, JSON, JSON lines, Parquet)",
            path=source.path,
        )
    matches = [spec for spec in formats() if _safe_sniff(spec, source)]
    if len(matches) == 1:
        return matches[0]
    if not matches and not source.is_dir:
        _explain_unreadable(source)
    if not matches and not source.is_dir and not source.is_parquet and b"\x00" in source.head:
        raise FormatDetectionError(
            "no known format fits: the file holds NUL bytes (a binary file, or text encoded as UTF-16/UTF-32); "
            "bearing reads UTF-8 text, Parquet and gzip. Re-save text as UTF-8 (e.g. iconv -f UTF-16 -t UTF-8)",
            path=source.path,
        )
    seen = source.describe()
    if not matches:
        lines = "\n".join(f"  - {s.name} ({s.tool}): {s.needs}" for s in formats())
        raise FormatDetectionError(
            f"no known format fits. Found {seen}. Each format needs:\n{lines}\n"
            "Pass format=NAME (CLI: --format NAME) or use the generic loader with a column mapping.",
            path=source.path,
        )
    lines = "\n".join(f"  - {s.name} ({s.tool}): {s.needs}" for s in matches)
    raise FormatDetectionError(
        f"several formats fit ({seen}):\n{lines}\nPass format=NAME to choose one.",
        path=source.path,
    )


def _explain_unreadable(source: Source) -> None:
    """One clear error for a file no sniffer could read at all (instead of the list of formats)."""
    if source.head_error and not source.head:
        raise InputError(f"cannot read the file: {source.head_error}", path=source.path)
    if not source.head.strip():
        raise FormatDetectionError(
            "an empty file (no bytes, or only blank lines); expected a trace or load-test file", path=source.path
        )
    if source.is_parquet:
        import io

        try:
            pl.read_parquet_schema(io.BytesIO(source.read_bytes()) if source.is_gzip else source.path)
        except Exception as exc:  # noqa: BLE001 - polars raises several kinds for a bad footer
            raise InputError(f"not a readable Parquet file (truncated, or its footer is corrupt: {exc})",
                             path=source.path) from exc


def load(path: str | Path, *, format: str | None = None, **options: object) -> Dataset:
    """Load any supported input (file or folder; gzip transparent) into its canonical kind.

    Returns a request trace, a load-point table or rate windows, each with provenance.
    ``format`` skips detection; ``options`` go to the format's loader.
    """
    source = Source(path)
    spec = get_format(format) if format else detect(source)
    return call_loader(spec, source, options)


def loader_options(spec: FormatSpec) -> list[str]:
    """Names of the keyword options ``spec.load`` accepts."""
    params = inspect.signature(spec.load).parameters.values()
    return [p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY]


def call_loader(spec: FormatSpec, source: Source, options: dict[str, object]) -> Dataset:
    """Run ``spec.load`` with ``options``; an option it does not take is a :class:`ParameterError`."""
    accepted = loader_options(spec)
    takes_any = any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in inspect.signature(spec.load).parameters.values()
    )
    unknown = [k for k in options if k not in accepted]
    if unknown and not takes_any:
        raise ParameterError(
            f"format {spec.name!r} does not take option(s) {unknown}; "
            f"it takes: {', '.join(accepted) if accepted else 'no options'}"
        )
    source.start_hashing()
    try:
        return spec.load(source, **options)
    except BearingError:
        raise
    except (KeyError, IndexError, TypeError, AttributeError, ValueError, pl.exceptions.PolarsError) as exc:
        # The edge's safety net: a document whose shape the loader did not expect (a key
        # missing deep inside a JSON report, a value of the wrong JSON type, bytes that are
        # not UTF-8). Loaders check what they can name; this names the rest, never a traceback.
        raise InputError(
            f"not a valid {spec.tool} file for format {spec.name!r}: {_describe(exc)}; expected {spec.needs}",
            path=source.path,
        ) from exc


def _describe(exc: BaseException) -> str:
    if isinstance(exc, KeyError):
        return f"the key {exc.args[0]!r} is missing"
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 text (byte {exc.start}: {exc.reason})"
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text[:200]}" if text else type(exc).__name__


def load_trace(path: str | Path, *, format: str | None = None, **options: object):
    """Load a per-request input into a :class:`~bearing_lib.data.trace.RequestTrace`.

    Detects the format like :func:`load`; raises :class:`InputError` when the input
    holds aggregates (a load-point table or rate windows) rather than requests.
    """
    ds = load(path, format=format, **options)
    if ds.kind != "requests":
        raise InputError(
            f"holds {ds.kind} ({ds.provenance.format}), not one row per request; "
            "use bearing_lib.load() for aggregate inputs",
            path=path,
        )
    return ds
