"""Evidence artifacts that are never overwritten (chapter 02).

A checkpoint script ends by writing one JSON document. Every field in it is
computed from what happened: file hashes are hashed, versions are asked of the
interpreter, counts are read from durable rows. ``write_exclusive`` writes a
temporary file beside the path, syncs it, and links it into place only if
nothing is there: an existing file (or a symlink, even a dangling one) is
refused and left exactly as it was, and a write that fails (a full disk)
leaves no file at all, so the next run is not refused by a half-written one.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import sqlite3
import sys
import time
from collections.abc import Callable
from pathlib import Path

from crashcourse.lab.harness import BoundaryNotReached

PACKAGE_DIR = Path(__file__).resolve().parents[1]  # crashcourse/, every module


class EvidenceExists(FileExistsError):
    """The output path already holds an artifact; nothing was written."""


def sha256_of(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def source_hashes(script: str | Path | None = None) -> dict[str, str]:
    """sha256 of each runtime module and of the checkpoint script itself."""
    hashes = {
        f"crashcourse/{module.relative_to(PACKAGE_DIR).as_posix()}": sha256_of(module)
        for module in sorted(PACKAGE_DIR.rglob("*.py"))
    }
    if script is not None:
        hashes[f"script/{Path(script).name}"] = sha256_of(Path(script))
    return hashes


def versions() -> dict[str, str]:
    """The interpreter, SQLite library and platform this run used."""
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "sqlite": sqlite3.sqlite_version,
        "platform": platform.platform(),
        "machine": platform.machine(),
    }


def manifest(script: str | Path | None = None, argv: list[str] | None = None) -> dict:
    """Who produced an artifact: sources, versions and the command line."""
    return {
        "sources_sha256": source_hashes(script),
        "versions": versions(),
        "argv": list(sys.argv if argv is None else argv),
        "created_unix": round(time.time(), 3),
    }


def refuse_existing(path: str | Path) -> Path:
    """Fail early (before any experiment runs) if ``path`` already exists, as
    a file, a folder or a symlink (a dangling one too: writing through it
    would put the evidence somewhere else)."""
    path = Path(path)
    if os.path.lexists(path):
        what = "is a symlink" if path.is_symlink() else "exists"
        raise EvidenceExists(f"{path} {what}; evidence is never overwritten")
    return path


def refused_output(path: str | Path) -> bool:
    """Checkpoint start-up: True, after saying why on stderr, when ``path`` exists.

    Every checkpoint calls this before its first trial and exits 2 on True, so
    an earlier artifact is never overwritten and no experiment runs in vain.
    """
    try:
        refuse_existing(path)
    except EvidenceExists as refused:
        print(f"refused: {refused}", file=sys.stderr)
        return True
    return False


def attempt(identity: dict, run: Callable[..., dict], *args: object) -> dict:
    """``run(*args)``, one trial; a trial the harness could not finish comes back
    failed, as ``identity`` plus its ``error`` and ``holds: False``.

    A worker that never reached its boundary, or a wait that ran out, is not
    evidence either way: the checkpoint keeps the failure and still writes
    what it has."""
    try:
        return run(*args)
    except (TimeoutError, BoundaryNotReached) as error:  # BoundaryTimeout included
        return {**identity, "error": f"{type(error).__name__}: {error}", "holds": False}
    except OSError as error:  # the machine refused (a full disk, no permission)
        return {**identity, "error": f"{type(error).__name__}: {error}", "holds": False}


def record(
    path: str | Path,
    evidence_id: str,
    script: str | Path,
    summary: dict,
    trials: list,
    argv: list[str] | None = None,
    **extra: object,
) -> Path:
    """Write a checkpoint's artifact: what it is (``evidence_id``, kept as the
    document's ``schema``), manifest, summary, trials (+ extra)."""
    document = {
        "schema": evidence_id,
        "manifest": manifest(script, argv),
        "summary": summary,
        "trials": trials,
        **extra,
    }
    return write_exclusive(path, document)


def write_exclusive(path: str | Path, document: dict[str, object]) -> Path:
    """Write ``document`` as JSON to a NEW file at ``path``, whole or not at all.

    The text goes to a temporary file in the same folder, is synced, then
    linked to ``path``, which fails if anything is there (``EvidenceExists``,
    nothing changed). Any failure on the way (``OSError``: a full disk)
    removes the temporary file: no partial evidence is ever left."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(document, indent=2, sort_keys=True, allow_nan=False) + "\n"
    refuse_existing(path)
    handle, temporary = tempfile_beside(path)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.link(temporary, path)  # never replaces: the exclusive step
    except FileExistsError:
        raise EvidenceExists(f"{path} exists; evidence is never overwritten") from None
    finally:
        os.unlink(temporary)
    return path


def tempfile_beside(path: Path) -> tuple[int, str]:
    """An open, new, empty file in ``path``'s folder (so a link can move it)."""
    import tempfile

    return tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial",
                            dir=path.parent)


def new_run_path(directory: str | Path, stem: str) -> Path:
    """A fresh name under ``directory`` for ``stem``: stem-YYYYmmdd-HHMMSS[-n].json."""
    directory = Path(directory)
    base = f"{stem}-{time.strftime('%Y%m%d-%H%M%S')}"
    candidate, n = directory / f"{base}.json", 1
    while candidate.exists():
        n += 1
        candidate = directory / f"{base}-{n}.json"
    return candidate
