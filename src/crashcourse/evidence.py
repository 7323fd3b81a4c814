"""Evidence artifacts that are never overwritten (chapter 02).

A checkpoint script ends by writing one JSON document. Every field in it is
computed from what happened: file hashes are hashed, versions are asked of the
interpreter, counts are read from durable rows. ``write_exclusive`` opens the
path with ``"x"``: an existing file is refused and left exactly as it was.
"""

from __future__ import annotations

import hashlib
import json
import platform
import sqlite3
import sys
import time
from collections.abc import Callable
from pathlib import Path

from crashcourse.harness import BoundaryNotReached

PACKAGE_DIR = Path(__file__).resolve().parent


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
    """Fail early (before any experiment runs) if ``path`` already exists."""
    path = Path(path)
    if path.exists():
        raise EvidenceExists(f"{path} exists; evidence is never overwritten")
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


def record(
    path: str | Path,
    schema: str,
    script: str | Path,
    summary: dict,
    trials: list,
    argv: list[str] | None = None,
    **extra: object,
) -> Path:
    """Write a checkpoint's artifact: schema, manifest, summary, trials (+ extra)."""
    document = {
        "schema": schema,
        "manifest": manifest(script, argv),
        "summary": summary,
        "trials": trials,
        **extra,
    }
    return write_exclusive(path, document)


def write_exclusive(path: str | Path, document: dict[str, object]) -> Path:
    """Write ``document`` as JSON to a NEW file; an existing one is refused."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(document, indent=2, sort_keys=True, allow_nan=False) + "\n"
    try:
        with path.open("x", encoding="utf-8") as handle:
            handle.write(text)
    except FileExistsError:
        raise EvidenceExists(f"{path} exists; evidence is never overwritten") from None
    return path


def new_run_path(directory: str | Path, stem: str) -> Path:
    """A fresh name under ``directory`` for ``stem``: stem-YYYYmmdd-HHMMSS[-n].json."""
    directory = Path(directory)
    base = f"{stem}-{time.strftime('%Y%m%d-%H%M%S')}"
    candidate, n = directory / f"{base}.json", 1
    while candidate.exists():
        n += 1
        candidate = directory / f"{base}-{n}.json"
    return candidate
