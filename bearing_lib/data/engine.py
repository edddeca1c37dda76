"""Where the aggregation of a large request table runs: embedded (polars, lazily) or on Dask.

A production month of a busy API is a partitioned Parquet dataset, not a file one
process loads. :func:`open_dataset` names one (a Parquet file, a folder of, possibly
hive-partitioned, Parquet files, or a glob; local paths or any fsspec URL such as
``s3://bucket/traces/`` when the filesystem package is installed) without reading it.
An :class:`Engine` then runs the aggregations that bearing needs over it:

* ``embedded`` (default): one polars lazy query over all files (projection pushdown:
  only the columns an aggregation names are read; streaming where the operation allows),
  in this process.
* ``dask``: one task per Parquet file on a Dask cluster: ``scheduler="tcp://host:8786"``
  for an existing one, else a :class:`distributed.LocalCluster` on this machine. Every
  task runs the *same* polars aggregation on its file and returns a small partial table
  (counts, sums, minima, maxima per group); the client combines the partials. Statistics
  that need every value of a group at once (per-step latency percentiles) use
  :meth:`Engine.shuffle_apply`: rows are shuffled by group key with
  ``dask.dataframe.shuffle`` so each group lands whole on one worker, which computes
  exactly what the embedded path computes.

Only the aggregation is distributed; fits, plans and reports consume its small results
unchanged. :meth:`Engine.describe` says where the work ran (engine, scheduler, workers,
partitions); profiles and load curves record it in their provenance.

Dask is an optional extra (``pip install -e '.[dask]'``): the embedded engine needs none
of it, and this module imports Dask only when ``engine="dask"`` is asked for.
"""

from __future__ import annotations

import functools
import glob as _glob
import logging
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

import polars as pl

from bearing_lib.common.errors import BadValueError, InputError, ParameterError, SchemaError
from bearing_lib.data.trace import REQUEST_SCHEMA

ENGINES: tuple[str, ...] = ("embedded", "dask")
#: Parquet metadata key that bearing's canonical writer sets (``loaders/canonical.py``)
TIME_ORIGIN_KEY = "bearing.time_origin"
#: smaller start times are read as relative (the canonical loader's rule)
EPOCH_FLOOR_S = 1e9
#: workers of the LocalCluster started when no scheduler is given
DEFAULT_LOCAL_WORKERS = 2


def _is_url(path: str) -> bool:
    return "://" in path and not path.startswith("file://")


@dataclass
class ParquetDataset:
    """A Parquet dataset named but not read: its files, columns and (metadata) time origin."""

    path: str
    files: list[str]
    columns: list[str]
    hive_columns: list[str] = field(default_factory=list)
    time_origin: str | None = None
    storage_options: dict[str, object] | None = None

    def __str__(self) -> str:
        hive = f"; folder keys {', '.join(self.hive_columns)}" if self.hive_columns else ""
        return (f"Parquet dataset {self.path}: {len(self.files):,} file(s), columns {', '.join(self.columns)}{hive} "
                f"(read by an engine, not loaded)")

    @property
    def canonical_columns(self) -> list[str]:
        return [c for c in self.columns if c in REQUEST_SCHEMA]

    def scan(self, columns: Sequence[str] | None = None) -> pl.LazyFrame:
        """A polars lazy scan of every file with the canonical ``columns`` (missing ones as typed nulls)."""
        return scan_files(self.files, self.columns, columns, self.storage_options, self.hive_columns)

    def n_rows(self) -> int | None:
        """Rows of all files from their footers (for progress bars); None for URLs or unreadable footers."""
        if any(_is_url(f) for f in self.files):
            return None
        import pyarrow.parquet as pq

        try:
            return sum(pq.ParquetFile(f).metadata.num_rows for f in self.files)
        except Exception:  # noqa: BLE001 - a progress total is optional
            return None

    def scan_file(self, file: str, columns: Sequence[str] | None = None) -> pl.LazyFrame:
        """The same for one of the files."""
        return scan_files([file], self.columns, columns, self.storage_options, self.hive_columns)


def hive_values(file: str, keys: Sequence[str]) -> dict[str, str]:
    """The ``key=value`` folder values of ``file`` for ``keys`` (URL-decoded, as polars and Spark write them)."""
    out = {}
    for part in file.replace("\\", "/").split("/")[:-1]:
        k, eq, v = part.partition("=")
        if eq and k in keys:
            out[k] = unquote(v)
    return out


def _hive_lits(file: str, keys: Sequence[str], wanted: Sequence[str]) -> list[pl.Expr]:
    vals = hive_values(file, keys)
    out = []
    for k in keys:
        if k not in wanted:
            continue
        v = vals.get(k)
        dtype = REQUEST_SCHEMA[k]
        try:
            out.append(pl.lit(None if v is None else pl.Series([v]).cast(dtype, strict=True)[0], dtype).alias(k))
        except pl.exceptions.PolarsError as exc:
            raise BadValueError(f"folder value {k}={v!r} does not fit the canonical dtype {dtype}", path=file,
                                field=k) from exc
    return out


def scan_files(files: Sequence[str], present: Sequence[str], columns: Sequence[str] | None,
               storage_options: dict[str, object] | None = None, hive: Sequence[str] = ()) -> pl.LazyFrame:
    """Lazy scan of ``files`` projected on canonical ``columns``, cast to the canonical dtypes; a
    canonical column the files lack comes back as nulls of its dtype, a canonical ``hive`` key
    (``run_id=a/step=3/part.parquet``) as its folder value."""
    wanted = list(columns) if columns is not None else [c for c in REQUEST_SCHEMA if c in present or c in hive]
    in_files = [c for c in wanted if c in present and c not in hive]
    exprs = [
        (pl.col(c).cast(REQUEST_SCHEMA[c], strict=True) if c in in_files else pl.lit(None, REQUEST_SCHEMA[c])).alias(c)
        for c in wanted if c not in hive
    ]
    from_path = [k for k in hive if k in wanted]

    def one(fs: list[str]) -> pl.LazyFrame:
        return pl.scan_parquet(fs, hive_partitioning=False, storage_options=storage_options,
                               missing_columns="insert", extra_columns="ignore").select(exprs)

    if not from_path:
        return one(list(files))
    parts = [one([f]).with_columns(_hive_lits(f, hive, wanted)).select(wanted) for f in files]
    return pl.concat(parts, how="vertical") if len(parts) > 1 else parts[0]


def _expand_local(path: str) -> list[str]:
    p = Path(path)
    if p.is_dir():
        return sorted(str(q) for q in p.rglob("*.parquet") if q.is_file() and not q.name.startswith((".", "_")))
    if p.is_file():
        return [str(p)]
    return sorted(q for q in _glob.glob(path, recursive=True) if Path(q).is_file())


def _expand_url(path: str) -> tuple[list[str], object]:
    try:
        import fsspec
    except ImportError as exc:  # pragma: no cover - fsspec comes with the dask extra
        raise ParameterError(f"{path}: reading URLs needs fsspec: pip install -e '.[dask]'") from exc
    try:
        fs, root = fsspec.core.url_to_fs(path)
    except (ImportError, ValueError) as exc:
        raise InputError(f"no filesystem for this URL ({exc}); install the fsspec package for its scheme "
                         "(e.g. s3fs for s3://, gcsfs for gs://)", path=path) from exc
    if fs.isdir(root):
        found = sorted(f for f in fs.find(root) if f.endswith(".parquet"))
    elif fs.isfile(root):
        found = [root]
    else:
        found = sorted(fs.glob(root))
    proto = fs.protocol[0] if isinstance(fs.protocol, tuple | list) else fs.protocol
    return [f if "://" in f else f"{proto}://{f}" for f in found], fs


def _hive_keys(files: list[str], root: str) -> list[str]:
    keys: dict[str, None] = {}
    for f in files[:1000]:
        rel = f[len(root):] if f.startswith(root) else f
        for part in rel.replace("\\", "/").split("/")[:-1]:
            if "=" in part:
                keys[part.split("=", 1)[0]] = None
    return list(keys)


def open_dataset(path: str | Path, *, storage_options: dict[str, object] | None = None) -> ParquetDataset:
    """Name a Parquet dataset: a file, a folder of Parquet files (hive ``key=value`` folders
    allowed; their keys are not request fields and are ignored), or a glob; local or an fsspec URL.

    The files' columns must be canonical request fields (``bearing_lib.data.trace``) and
    include ``start_s``; a hive key may be any name. Nothing is read but the footers.

    Raises
    ------
    InputError
        No Parquet file matches, or a footer cannot be read (the message names the file).
    SchemaError
        A column is not a canonical field, or ``start_s`` is missing.
    """
    path = str(path)
    if _is_url(path):
        files, _fs = _expand_url(path)
    else:
        path = path.removeprefix("file://")
        files = _expand_local(path)
    if not files:
        raise InputError("no Parquet file here (expected a .parquet file, a folder of them, or a glob)", path=path)
    cols: dict[str, None] = {}
    origin = None
    import pyarrow.parquet as pq

    for i, f in enumerate(files if len(files) <= 64 else [files[0], files[-1]]):
        try:
            if _is_url(f):
                import fsspec

                with fsspec.open(f, "rb", **(storage_options or {})) as fh:
                    meta = pq.read_schema(fh)
            else:
                meta = pq.read_schema(f)
        except Exception as exc:  # noqa: BLE001 - any unreadable footer is an input error
            raise InputError(f"not a readable Parquet file ({exc})", path=f) from exc
        for name in meta.names:
            cols[name] = None
        md = meta.metadata or {}
        got = md.get(TIME_ORIGIN_KEY.encode())
        if i == 0 and got:
            origin = got.decode()
    hive_all = _hive_keys(files, path)
    hive = [k for k in hive_all if k in REQUEST_SCHEMA]  # other folder keys (day=..., shard=...) are not fields
    names = [c for c in cols if c not in hive_all]
    extra = [c for c in names if c not in REQUEST_SCHEMA]
    if extra or "start_s" not in names + hive:
        why = f"non-canonical column(s) {extra}" if extra else "no start_s column"
        raise SchemaError(
            f"{why}; a Parquet dataset for the engines holds bearing-canonical columns "
            f"({', '.join(REQUEST_SCHEMA)}) and always start_s; convert other formats with `bearing inspect` / "
            "`write_trace` first",
            path=path, field=extra[0] if extra else "start_s",
        )
    return ParquetDataset(path, files, names, hive, origin, storage_options)


# --------------------------------------------------------------------------- tasks (run on workers)


Partial = Callable[[pl.LazyFrame], list[pl.LazyFrame]]


def _collect(queries: list[pl.LazyFrame]) -> list[pl.DataFrame]:
    return pl.collect_all(queries, engine="streaming")


def _apply_file(file: str, present: list[str], columns: list[str], fn: Partial,
                storage_options: dict[str, object] | None, hive: list[str]) -> list[pl.DataFrame]:
    """One Dask task: the partial aggregations ``fn`` over one Parquet file."""
    try:
        return _collect(fn(scan_files([file], present, columns, storage_options, hive)))
    except pl.exceptions.PolarsError as exc:
        raise InputError(f"cannot aggregate this Parquet file ({exc})", path=file) from exc


def _prep_file_pandas(file: str, present: list[str], columns: list[str],
                      prep: Callable[[pl.LazyFrame], pl.LazyFrame], storage_options: dict[str, object] | None,
                      hive: list[str]):
    """One Dask task before a shuffle: the prepared rows of one file as a pandas frame (Arrow-backed)."""
    try:
        frame = prep(scan_files([file], present, columns, storage_options, hive)).collect()
    except pl.exceptions.PolarsError as exc:
        raise InputError(f"cannot read this Parquet file ({exc})", path=file) from exc
    return frame.to_pandas(use_pyarrow_extension_array=True)


def _apply_group(files: list[str], present: list[str], columns: list[str],
                 prep: Callable[[pl.LazyFrame], pl.LazyFrame], fn: Callable[[pl.DataFrame], pl.DataFrame | None],
                 storage_options: dict[str, object] | None, hive: list[str]) -> pl.DataFrame | None:
    """One Dask task: ``fn`` over the prepared rows of a group of files that together hold whole groups."""
    try:
        frame = prep(scan_files(files, present, columns, storage_options, hive)).collect()
    except pl.exceptions.PolarsError as exc:
        raise InputError(f"cannot read these Parquet files ({exc})", path=files[0]) from exc
    return fn(frame) if frame.height else None


def _apply_pandas(pdf, fn: Callable[[pl.DataFrame], pl.DataFrame | None]) -> pl.DataFrame | None:  # noqa: ANN001
    """One Dask task after a shuffle: ``fn`` over one partition's (whole) groups."""
    frame = pl.from_pandas(pdf)
    if frame.height == 0:
        return None
    return fn(frame)


# --------------------------------------------------------------------------- engine


@dataclass(frozen=True)
class EngineRun:
    """Where the work on a Parquet dataset ran (:meth:`Engine.description`): the profile JSON's ``source.engine``
    and the limits' ``conditions.extra["engine"]``."""

    engine: str
    """``embedded`` or ``dask``."""
    scheduler: str | None = None
    workers: int | None = None
    partitions: int | None = None
    """Parquet files read."""
    detail: str | None = None

    def to_dict(self) -> dict[str, object]:
        return {"engine": self.engine, "scheduler": self.scheduler, "workers": self.workers,
                "partitions": self.partitions, "detail": self.detail}

    @classmethod
    def of(cls, engine: Engine) -> EngineRun:
        """The description of an :class:`Engine` as it stands now."""
        return engine.description()

    @classmethod
    def from_dict(cls, d: object, *, source: str = "source.engine") -> EngineRun:
        from bearing_lib.common.schema import parse

        return parse(cls, d, what=source)


class Engine:
    """Runs aggregations over a :class:`ParquetDataset`: ``embedded`` or ``dask`` (see module docstring).

    Use as a context manager (a LocalCluster started here is closed on exit)::

        with Engine("dask", scheduler="tcp://10.0.0.5:8786") as eng:
            parts = eng.map_partitions(ds, columns, fn)
    """

    def __init__(self, name: str = "embedded", *, scheduler: str | None = None,
                 n_workers: int = DEFAULT_LOCAL_WORKERS, processes: bool = True,
                 progress: bool | None = None) -> None:
        if name not in ENGINES:
            raise ParameterError(f"engine must be one of {', '.join(ENGINES)}, got {name!r}")
        if scheduler is not None and name != "dask":
            raise ParameterError("--scheduler names a Dask scheduler; it needs --engine dask")
        if n_workers < 1:
            raise ParameterError(f"n_workers must be >= 1, got {n_workers}")
        self.name = name
        self.scheduler = scheduler
        self.n_workers = n_workers
        self.processes = processes
        self.progress = sys.stderr.isatty() if progress is None else progress
        self._client = None
        self._cluster = None
        self.partitions = 0

    # ---- lifecycle
    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None

    @property
    def client(self):  # noqa: ANN201 - distributed.Client, imported lazily
        if self.name != "dask":
            raise ParameterError("the embedded engine has no Dask client")
        if self._client is None:
            try:
                from distributed import Client, LocalCluster
            except ImportError as exc:
                raise ParameterError(
                    "engine 'dask' needs Dask: pip install -e '.[dask]' (dask[distributed])"
                ) from exc
            # the p2p shuffle logs every shuffle's start and end at WARNING level
            logging.getLogger("distributed.shuffle._scheduler_plugin").setLevel(logging.ERROR)
            if self.scheduler:
                try:
                    self._client = Client(self.scheduler, timeout="10s")
                except (OSError, TimeoutError) as exc:
                    raise ParameterError(f"cannot reach the Dask scheduler {self.scheduler!r}: {exc}") from exc
            else:
                self._cluster = LocalCluster(n_workers=self.n_workers, threads_per_worker=1,
                                             processes=self.processes, dashboard_address=":0",
                                             worker_dashboard_address=None)
                self._client = Client(self._cluster)
        return self._client

    def describe(self) -> dict[str, object]:
        """Where the work ran: ``{"engine", "scheduler", "workers", "partitions", "detail"}`` (for provenance)."""
        return self.description().to_dict()

    def description(self) -> EngineRun:
        """Where the work ran (:class:`EngineRun`)."""
        if self.name == "embedded":
            return EngineRun(engine="embedded", scheduler=None, workers=1, partitions=self.partitions,
                                     detail="polars lazy query in this process")
        c = self.client
        workers = len(c.scheduler_info(n_workers=-1).get("workers", {})) if hasattr(c, "scheduler_info") else None
        return EngineRun(engine="dask", scheduler=self.scheduler or f"LocalCluster ({c.scheduler.address})",
                                 workers=workers, partitions=self.partitions,
                                 detail="one task per Parquet file; groups shuffled by key for exact percentiles")

    def _wait(self, futures: list) -> None:
        if self.progress:
            from distributed import progress

            progress(futures)
            print(file=sys.stderr)

    # ---- operations
    def map_partitions(self, ds: ParquetDataset, columns: Sequence[str], fn: Partial) -> list[pl.DataFrame]:
        """Partial aggregations over the dataset, combined: table ``i`` of the result is table ``i``
        of every partition's ``fn`` (a lazy frame of ``columns`` -> lazy partial tables), concatenated.

        Embedded: each query streams over a lazy scan of every file on its own (a ``collect_all``
        of the queries shares one read by caching the scan: 3.9 GiB at 100M requests, and it was
        slower at 10M). Dask: one task per file (whose queries share one read of the file).
        The caller combines the rows (sums of counts, min of minima ...), so the engines agree
        exactly on counts. ``fn`` must be picklable (a module-level function or a
        ``functools.partial`` of one).
        """
        cols = list(columns)
        self.partitions = len(ds.files)
        if self.name == "embedded":
            return [q.collect(engine="streaming") for q in fn(ds.scan(cols))]
        futs = self.client.map(_apply_file, ds.files, present=ds.columns, columns=cols, fn=fn,
                               storage_options=ds.storage_options, hive=ds.hive_columns, pure=False)
        self._wait(futs)
        parts = self.client.gather(futs)
        return [pl.concat([p[i] for p in parts], how="vertical_relaxed") for i in range(len(parts[0]))]

    def shuffle_apply(self, ds: ParquetDataset, columns: Sequence[str], prep: Callable[[pl.LazyFrame], pl.LazyFrame],
                      key: str, fn: Callable[[pl.DataFrame], pl.DataFrame | None]) -> list[pl.DataFrame]:
        """``fn`` over whole groups of ``key``: rows (``prep`` applied per file) shuffled by ``key``.

        Embedded: ``fn`` over all prepared rows at once (in memory). Dask: rows move with
        ``dask.dataframe`` ``shuffle(on=key)`` so that every value of a group is on one
        partition, and ``fn`` runs per partition; results are concatenated by the caller.
        """
        cols = list(columns)
        self.partitions = len(ds.files)
        if self.name == "embedded":
            out = fn(prep(ds.scan(cols)).collect())
            return [] if out is None else [out]
        import dask
        import dask.dataframe as dd

        first = scan_files(ds.files[:1], ds.columns, cols, ds.storage_options, ds.hive_columns)
        meta_pl = prep(first).head(0).collect()
        meta = meta_pl.to_pandas(use_pyarrow_extension_array=True)
        ddf = dd.from_map(functools.partial(_prep_file_pandas, present=ds.columns, columns=cols, prep=prep,
                                            storage_options=ds.storage_options, hive=ds.hive_columns),
                          ds.files, meta=meta)
        shuffled = ddf.shuffle(on=key, npartitions=max(1, min(len(ds.files), 64)))
        parts = [dask.delayed(_apply_pandas)(d, fn) for d in shuffled.to_delayed()]
        futs = self.client.compute(parts)
        self._wait(futs)
        return [r for r in self.client.gather(futs) if r is not None]


    def apply_file_groups(self, ds: ParquetDataset, columns: Sequence[str], groups: Sequence[Sequence[str]],
                          prep: Callable[[pl.LazyFrame], pl.LazyFrame],
                          fn: Callable[[pl.DataFrame], pl.DataFrame | None]) -> list[pl.DataFrame]:
        """``fn`` over groups of files, one task per group, when the caller knows that each key's
        rows lie in one group (e.g. ``run_id=...`` folders): the shuffle of :meth:`shuffle_apply`
        is then not needed. Embedded: one group after the other in this process (memory: one group)."""
        self.partitions = len(ds.files)
        if self.name == "embedded":
            out = (_apply_group(list(g), ds.columns, list(columns), prep, fn, ds.storage_options, ds.hive_columns)
                   for g in groups)
            return [r for r in out if r is not None]
        futs = [self.client.submit(_apply_group, list(g), present=ds.columns, columns=list(columns), prep=prep,
                                   fn=fn, storage_options=ds.storage_options, hive=ds.hive_columns, pure=False)
                for g in groups]
        self._wait(futs)
        return [r for r in self.client.gather(futs) if r is not None]


__all__ = ["DEFAULT_LOCAL_WORKERS", "ENGINES", "Engine", "EngineRun", "ParquetDataset", "hive_values",
           "open_dataset", "scan_files"]
