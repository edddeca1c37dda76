"""Large CSV / JSON traces converted once to Parquet, so that their profile streams like a Parquet input.

``bearing profile BIG.csv`` on a source above :data:`CONVERT_MIN_BYTES` loads it once with its
loader (the only eager step), writes the canonical trace as Parquet into a cache folder, and
profiles that file with the one-pass embedded engine (``traffic/onepass.py``). The next run
finds the cached file and skips the parse, as long as the source is unchanged: the cache key
is the source's resolved path, size, modification time and the sha256 of its first MiB, plus
the format and loader options (a different column mapping is a different trace).

The cache folder is ``$BEARING_CACHE_DIR/parquet`` when that variable is set, else the
user cache folder (``platformdirs.user_cache_dir("bearing")/parquet``). A cached file is a
``<key>.parquet`` beside ``<key>.json`` (the source's provenance: path, sha256 of the whole
file, format, tool); both are written to temporary names and renamed, so a crash leaves no
half file. Delete the folder to clear the cache.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, replace
from pathlib import Path

from bearing_lib.traffic.source import ProfileSource

#: sources at least this large (bytes) are converted; ``BEARING_PARQUET_CACHE_MIN_BYTES`` overrides it
CONVERT_MIN_BYTES = 64 * 2**20
#: the text formats that are converted (Parquet inputs stream already)
TEXT_SUFFIXES = (".csv", ".tsv", ".json", ".jsonl", ".ndjson", ".gz")


def min_bytes() -> int:
    env = os.environ.get("BEARING_PARQUET_CACHE_MIN_BYTES")
    return int(env) if env else CONVERT_MIN_BYTES


def cache_dir() -> Path:
    env = os.environ.get("BEARING_CACHE_DIR")
    if env:
        return Path(env) / "parquet"
    import platformdirs

    return Path(platformdirs.user_cache_dir("bearing")) / "parquet"


def wants_conversion(path: Path) -> bool:
    """A text table (CSV / JSON / JSON lines, possibly gzipped) of at least :func:`min_bytes` bytes."""
    return path.is_file() and path.name.lower().endswith(TEXT_SUFFIXES) and path.stat().st_size >= min_bytes()


def cache_key(path: Path, format: str | None, options: dict[str, object]) -> str:
    """Path + size + mtime + sha256 of the first MiB, with the format and loader options."""
    st = path.stat()
    with path.open("rb") as fh:
        head = hashlib.sha256(fh.read(1 << 20)).hexdigest()
    opts = json.dumps({k: str(v) for k, v in sorted(options.items())}, sort_keys=True)
    raw = f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}|{head}|{format}|{opts}"
    return hashlib.sha256(raw.encode()).hexdigest()[:32]


@dataclass
class Converted:
    """A cached Parquet copy of a source: its file, the source's provenance, and whether it was reused."""

    parquet: Path
    source: dict[str, object]
    reused: bool

    def profile_source(self, dataset_source: ProfileSource) -> ProfileSource:
        """The profile's ``source`` with the original file's path, hash, format and tool, and the cache named."""
        keep = {k: self.source[k] for k in ("path", "sha256", "format", "tool") if k in self.source}
        return replace(dataset_source, **keep, parquet_cache=str(self.parquet))  # type: ignore[arg-type]


def to_parquet_cache(path: Path, *, format: str | None = None, options: dict[str, object] | None = None) -> Converted:
    """The cached canonical Parquet copy of ``path`` (made now by its loader when missing or stale).

    Raises what the loader raises; ``ParameterError`` when the source is not per-request traffic with
    times (load-test output, rate windows): those are profiled by the eager path.
    """
    from bearing_lib.common.errors import ParameterError
    from bearing_lib.data.trace import RequestTrace
    from bearing_lib.loaders import load
    from bearing_lib.loaders.canonical import write_trace

    options = dict(options or {})
    key = cache_key(path, format, options)
    folder = cache_dir()
    pq_file, meta_file = folder / f"{key}.parquet", folder / f"{key}.json"
    if pq_file.is_file() and meta_file.is_file():
        return Converted(pq_file, json.loads(meta_file.read_text()), True)
    ds = load(path, format=format, **options)
    if not isinstance(ds, RequestTrace) or ds.provenance.time_origin == "none":
        raise ParameterError(f"{path}: {ds.kind} without per-request times is not converted to Parquet")
    if ds.frame["step"].null_count() < ds.frame.height:
        raise ParameterError(f"{path}: the requests carry load-test steps; a traffic profile describes production "
                             "traffic. Use `bearing limits` for load-test results")
    folder.mkdir(parents=True, exist_ok=True)
    prov = ds.provenance
    source = {"path": str(path), "sha256": prov.sha256 or None, "format": prov.format, "tool": prov.tool}
    tmp = folder / f".{key}.{os.getpid()}.parquet"
    write_trace(RequestTrace(ds.frame, prov), tmp)
    tmp.replace(pq_file)
    tmp_meta = folder / f".{key}.{os.getpid()}.json"
    tmp_meta.write_text(json.dumps(source))
    tmp_meta.replace(meta_file)
    return Converted(pq_file, source, False)


__all__ = ["CONVERT_MIN_BYTES", "Converted", "cache_dir", "cache_key", "min_bytes", "to_parquet_cache",
           "wants_conversion"]
