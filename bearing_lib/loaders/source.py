"""A file or folder to load, read lazily and transparently through gzip.

Loaders and sniffers never open files themselves; they ask an :class:`InputSource`, which
decompresses ``.gz`` inputs (by magic bytes, not by name), strips a UTF-8 BOM, keeps
CRLF handling in one place, and caches what several sniffers look at (the head).
Nothing here writes: inputs are opened read-only.
"""

from __future__ import annotations

import gzip
import io
import json
import threading
import zlib
from functools import cached_property
from pathlib import Path

from bearing_lib.common.errors import InputError
from bearing_lib.data.provenance import sha256_of

GZIP_MAGIC = b"\x1f\x8b"
HEAD_BYTES = 64 * 1024


class InputSource:
    """A path to load (file or folder)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if not self.path.exists():
            raise InputError("no such file or folder", path=self.path)
        self.head_error: str | None = None  # why the head could not be read (e.g. a truncated gzip)
        self._hasher: threading.Thread | None = None
        self._hash: list[str] = []

    def __repr__(self) -> str:
        return f"InputSource({str(self.path)!r})"

    @property
    def name(self) -> str:
        """File name without a trailing ``.gz``."""
        n = self.path.name
        return n[:-3] if n.endswith(".gz") else n

    @property
    def suffix(self) -> str:
        """Lower-case suffix without ``.gz`` (``.csv``, ``.jsonl`` ...)."""
        return Path(self.name).suffix.lower()

    @property
    def is_dir(self) -> bool:
        return self.path.is_dir()

    @cached_property
    def is_gzip(self) -> bool:
        if self.is_dir:
            return False
        with self.path.open("rb") as fh:
            return fh.read(2) == GZIP_MAGIC

    @property
    def is_parquet(self) -> bool:
        """Parquet content (``PAR1`` magic), compressed or not."""
        return self.head[:4] == b"PAR1"

    @property
    def looks_like_jsonl(self) -> bool:
        """The first line is a JSON object (JSON lines, or a one-line JSON document)."""
        return isinstance(self.first_json_line, dict)

    def start_hashing(self) -> None:
        """Compute :attr:`sha256` in a background thread (hashlib and file reads release the
        GIL), so hashing a large file overlaps with parsing it."""
        if self._hasher is None and "sha256" not in self.__dict__:
            self._hasher = threading.Thread(target=lambda: self._hash.append(sha256_of(self.path)), daemon=True)
            self._hasher.start()

    @cached_property
    def sha256(self) -> str:
        """sha256 of the raw bytes as stored (folders: see :func:`sha256_of`)."""
        if self._hasher is not None:
            self._hasher.join()
            if self._hash:
                return self._hash[0]
        return sha256_of(self.path)

    def open_binary(self) -> io.BufferedIOBase:
        """Decompressed byte stream (read-only)."""
        if self.is_dir:
            raise InputError("expected a file, found a folder", path=self.path)
        if self.is_gzip:
            return gzip.open(self.path, "rb")  # type: ignore[return-value]
        return self.path.open("rb")

    def read_bytes(self) -> bytes:
        """Whole decompressed content, BOM removed."""
        try:
            with self.open_binary() as fh:
                data = fh.read()
        except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
            raise InputError(f"the gzip stream is truncated or corrupt ({exc}); expected a complete .gz file",
                             path=self.path) from exc
        return data.removeprefix(b"\xef\xbb\xbf")

    def read_text(self) -> str:
        """Whole decompressed content as text (UTF-8, BOM removed, CRLF kept)."""
        try:
            return self.read_bytes().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"not UTF-8 text (byte {exc.start}): {exc.reason}", path=self.path) from exc

    @cached_property
    def head(self) -> bytes:
        """First 64 KiB of the decompressed content, BOM removed (empty for folders)."""
        if self.is_dir:
            return b""
        try:
            with self.open_binary() as fh:
                data = fh.read(HEAD_BYTES)
        except (OSError, EOFError, zlib.error) as exc:
            self.head_error = f"the gzip stream is truncated or corrupt ({exc})" if self.is_gzip else str(exc)
            return b""
        return data.removeprefix(b"\xef\xbb\xbf")

    @cached_property
    def head_text(self) -> str:
        return self.head.decode("utf-8", errors="replace")

    @cached_property
    def head_lines(self) -> list[str]:
        """Complete lines of the head (the possibly cut last line dropped unless it is all)."""
        text = self.head_text
        lines = text.splitlines()
        if len(self.head) == HEAD_BYTES and lines:
            lines = lines[:-1]
        return lines

    @property
    def first_line(self) -> str:
        return self.head_lines[0] if self.head_lines else ""

    @cached_property
    def first_json_line(self) -> object | None:
        """The first line parsed as JSON (lenient: ``Infinity``/``NaN`` allowed), or None."""
        try:
            return json.loads(self.first_line)
        except (ValueError, IndexError):
            return None

    @cached_property
    def json(self) -> object:
        """Whole content parsed as JSON (lenient: ``Infinity``/``NaN`` allowed)."""
        text = self.read_text()
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(
                f"not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}", path=self.path
            ) from exc

    def children(self, pattern: str = "*") -> list[InputSource]:
        """Files directly inside a folder that match ``pattern``, sorted by name."""
        if not self.is_dir:
            return []
        return [InputSource(p) for p in sorted(self.path.glob(pattern)) if p.is_file()]

    def describe(self) -> str:
        """What a human would want to see when detection fails."""
        if self.is_dir:
            names = sorted(p.name for p in self.path.iterdir())
            more = f" … (+{len(names) - 12} more)" if len(names) > 12 else ""
            return f"a folder holding {len(names)} entries: {', '.join(names[:12])}{more}"
        if not self.head:
            return "an empty file"
        if self.is_parquet:
            try:
                import polars as pl

                target = io.BytesIO(self.read_bytes()) if self.is_gzip else self.path
                return f"a Parquet file with columns {list(pl.read_parquet_schema(target))[:30]}"
            except Exception:  # noqa: BLE001 - a broken footer: say what we know
                return "a Parquet file whose footer cannot be read"
        if self.head.lstrip()[:1] in (b"{", b"["):
            # name the JSON shape found, whatever the line layout: a one-line document longer than the
            # head has no complete first line (it used to read as "text whose first line is ''")
            return self._describe_json()
        first = self.first_line
        return f"text whose first line is {first[:200]!r}"

    def _describe_json(self) -> str:
        """The shape of a file that starts like JSON: one object, an array, JSON lines, or where it breaks."""
        why = "it is JSON null"
        try:
            whole = self.json
        except InputError as exc:
            whole, why = None, str(exc)
        if isinstance(whole, dict):
            return f"a JSON object with keys {sorted(whole)[:20]}"
        if isinstance(whole, list):
            inner = sorted(whole[0])[:20] if whole and isinstance(whole[0], dict) else None
            return f"a JSON array of {len(whole)} items" + (f"; the first has keys {inner}" if inner else "")
        if whole is not None:
            return f"a JSON {type(whole).__name__} value"
        try:
            lines = [ln for ln in self.read_text().splitlines() if ln.strip()]
            objs = [json.loads(ln) for ln in lines]
        except (ValueError, InputError):
            objs = None
        if objs and all(isinstance(o, dict) for o in objs):
            return f"JSON lines ({len(objs)} objects); the first has keys {sorted(objs[0])[:20]}"
        return "text that starts like JSON but does not parse: " + why.removeprefix(f"{self.path}: ")
