"""sha256 of an input (``bearing_lib.data.provenance.sha256_of``): a file's bytes, a folder's files as the loaders read
them. Expected values are hashlib's on the bytes written here."""

from __future__ import annotations

import hashlib

from bearing_lib.data.provenance import sha256_of
from bearing_lib.limits.result import EMPTY_SHA256


def _lines(pairs: list[tuple[str, bytes]]) -> str:
    h = hashlib.sha256()
    for rel, data in sorted(pairs):
        h.update(f"{rel} {hashlib.sha256(data).hexdigest()}\n".encode())
    return h.hexdigest()


def test_a_folder_hashes_its_files_through_symlinked_subfolders_once(tmp_path):
    run = tmp_path / "run-7"
    run.mkdir()
    (run / "a.csv").write_bytes(b"x,y\n1,2\n")
    (run / "b.csv").write_bytes(b"x,y\n3,4\n")
    (run / "again").symlink_to(run)  # a cycle: the real folder is walked once
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    (sweep / "latest").symlink_to(run)
    (sweep / "README").write_bytes(b"notes")
    assert sha256_of(run / "a.csv") == hashlib.sha256(b"x,y\n1,2\n").hexdigest()
    assert sha256_of(sweep) == _lines([("README", b"notes"), ("latest/a.csv", b"x,y\n1,2\n"),
                                       ("latest/b.csv", b"x,y\n3,4\n")])
    # a folder whose only data sit behind the link is not the empty input (two such folders would match)
    only = tmp_path / "only"
    only.mkdir()
    (only / "latest").symlink_to(run)
    assert sha256_of(only) == _lines([("latest/a.csv", b"x,y\n1,2\n"), ("latest/b.csv", b"x,y\n3,4\n")])
    assert sha256_of(only) != EMPTY_SHA256
    (tmp_path / "empty").mkdir()
    assert sha256_of(tmp_path / "empty") == EMPTY_SHA256 == hashlib.sha256(b"").hexdigest()
