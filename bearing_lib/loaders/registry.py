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
from bearing_lib.loaders.source import InputSource

DatasetKind = Literal["requests", "loadpoints", "rates", "metrics"]


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
    sniff: Callable[[InputSource], bool]
    load: Callable[..., Dataset]
    version: Callable[[InputSource], str | None] | None = None


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


def _safe_sniff(spec: FormatSpec, source: InputSource) -> bool:
    try:
        return bool(spec.sniff(source))
    except Exception:  # a sniffer that trips over an odd file simply does not match
        return False


def detect(path: str | Path | InputSource) -> FormatSpec:
    """The one format that recognises ``path``.

    A folder that no folder format claims, holding exactly one recognisable file (beside
    READMEs, licences, plots or other files no format claims), is detected as that file's
    format; :func:`resolve` also gives the file. Raises :class:`FormatDetectionError` when
    none or several fit.
    """
    return resolve(path)[0]


FOLDER_DEPTH = 3
"""How far :func:`resolve` follows a folder whose only entry (besides non-data files) is one subfolder."""

FOLDER_MAX_FILES = 200
"""A folder with more files than this is not searched file by file (detection stays cheap)."""


def _matches(source: InputSource) -> list[FormatSpec]:
    return [spec for spec in formats() if _safe_sniff(spec, source)]


def _visible(path: Path) -> bool:
    return not path.name.startswith((".", "~"))


def _one_file_in(folder: InputSource, specs: list[FormatSpec] | None = None, depth: int = 0):
    """``(spec, file, claimed)`` for a folder's recognisable files.

    ``claimed`` lists every ``(file, spec)`` found; ``spec, file`` are set only when exactly
    one file is claimed by exactly one format. When the folder holds no claimed file and
    exactly one subfolder, that subfolder is searched (up to :data:`FOLDER_DEPTH` levels).
    """
    entries = [p for p in sorted(folder.path.iterdir()) if _visible(p)]
    files = [p for p in entries if p.is_file()]
    if len(files) > FOLDER_MAX_FILES:
        return None, None, []
    claimed: list[tuple[InputSource, list[FormatSpec]]] = []
    for f in files:
        child = InputSource(f)
        found = [s for s in (specs if specs is not None else formats()) if _safe_sniff(s, child)]
        if found:
            claimed.append((child, found))
    if not claimed:
        subdirs = [p for p in entries if p.is_dir()]
        if len(subdirs) == 1 and depth + 1 < FOLDER_DEPTH:
            sub = InputSource(subdirs[0])
            found = [s for s in (specs if specs is not None else formats()) if _safe_sniff(s, sub)]
            if len(found) == 1:
                return found[0], sub, [(sub, found)]
            if found:
                return None, None, [(sub, found)]
            return _one_file_in(sub, specs, depth + 1)
        return None, None, []
    if len(claimed) == 1 and len(claimed[0][1]) == 1:
        return claimed[0][1][0], claimed[0][0], claimed
    return None, None, claimed


def _note_folder(folder: InputSource, file: InputSource) -> str:
    others = sorted(p.name for p in folder.path.iterdir() if _visible(p) and p != file.path
                    and not file.path.is_relative_to(p))
    rel = file.path.relative_to(folder.path).as_posix()
    rest = f"; bearing reads none of the other entries ({', '.join(others[:8])}{' …' if len(others) > 8 else ''})" \
        if others else ""
    return f"the folder holds one recognisable file, {rel}, and was read as that file{rest}"


SUBFOLDER_HINTS = 20
"""At most this many subfolders are tried when a folder holds nothing readable, to name the ones that are."""


def _readable_subfolders(folder: InputSource, depth: int = 0) -> list[tuple[str, str]]:
    """``(relative path, format)`` of subfolders (two levels down at most) that :func:`resolve` reads."""
    found: list[tuple[str, str]] = []
    subdirs = [p for p in sorted(folder.path.iterdir()) if p.is_dir() and _visible(p)][:SUBFOLDER_HINTS]
    for sub in subdirs:
        try:
            spec, src = _resolve(InputSource(sub), None, hints=False)
        except FormatDetectionError:
            if depth < 1:
                found.extend((f"{sub.name}/{rel}", name)
                             for rel, name in _readable_subfolders(InputSource(sub), depth + 1))
            continue
        found.append((sub.name, spec.name))
    return found


def resolve(path: str | Path | InputSource, format: str | None = None) -> tuple[FormatSpec, InputSource]:
    """The format of ``path`` and the source to load with it.

    The source is ``path`` itself, except for a folder that no folder format claims and that
    holds exactly one recognisable file: then it is that file (its format decides). With
    ``format`` given, detection is skipped, but a folder that format does not read is still
    searched for the one file it does.
    """
    source = path if isinstance(path, InputSource) else InputSource(path)
    return _resolve(source, format, hints=True)


def _resolve(source: InputSource, format: str | None, *, hints: bool) -> tuple[FormatSpec, InputSource]:
    if format:
        spec = get_format(format)
        if source.is_dir and not _safe_sniff(spec, source):
            found, file, _ = _one_file_in(source, [spec])
            if found is not None and file is not None:
                return spec, file
        return spec, source
    if source.is_dir and not any(p.name[:1] != "." for p in source.path.iterdir()):
        raise FormatDetectionError(
            "the folder is empty; expected the files of one load test or trace (CSV, JSON, JSON lines, Parquet)",
            path=source.path,
        )
    matches = _matches(source)
    if len(matches) == 1:
        return matches[0], source
    if not matches and not source.is_dir:
        _explain_unreadable(source)
    if not matches and not source.is_dir and not source.is_parquet and b"\x00" in source.head:
        raise FormatDetectionError(
            "no known format fits: the file holds NUL bytes (a binary file, or text encoded as UTF-16/UTF-32); "
            "bearing reads UTF-8 text, Parquet and gzip. Re-save text as UTF-8 (e.g. iconv -f UTF-16 -t UTF-8)",
            path=source.path,
        )
    seen = source.describe()
    if not matches and source.is_dir:
        found, file, claimed = _one_file_in(source)
        if found is not None and file is not None:
            return found, file
        if claimed:
            lines = "\n".join(f"  - {c.path.relative_to(source.path).as_posix()}: {', '.join(s.name for s in specs)}"
                              for c, specs in claimed)
            raise FormatDetectionError(
                f"the folder holds several recognisable inputs:\n{lines}\n"
                "Pass one of them (a file or a sweep folder), or --format NAME when one file fits several formats.",
                path=source.path,
            )
    if not matches and source.is_dir and hints:
        inside = _readable_subfolders(source)
        if inside:
            lines = "\n".join(f"  - {rel}: {name}" for rel, name in inside)
            raise FormatDetectionError(
                f"the folder holds no input bearing reads directly, but these subfolders do:\n{lines}\n"
                "Pass one of them.",
                path=source.path,
            )
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


def _explain_unreadable(source: InputSource) -> None:
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
    if not isinstance(path, (str, Path)):
        raise ParameterError(
            f"load() takes one path (a file or a folder), got {type(path).__name__} {path!r:.200}; to read "
            "several files as one sweep, put them in one folder and pass the folder")
    folder = InputSource(path)
    spec, source = resolve(folder, format)
    ds = call_loader(spec, source, options)
    if source is not folder:
        ds.provenance.add("folder_one_file", _note_folder(folder, source), level="info")
    return ds


def loader_options(spec: FormatSpec) -> list[str]:
    """Names of the keyword options ``spec.load`` accepts."""
    params = inspect.signature(spec.load).parameters.values()
    return [p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY]


def call_loader(spec: FormatSpec, source: InputSource, options: dict[str, object]) -> Dataset:
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
