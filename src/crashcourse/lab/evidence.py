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

import ast
import hashlib
import json
import os
import platform
import re
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


MODULE_NAME = re.compile(r"crashcourse(?:\.[A-Za-z_]\w*)+")


def _module_files(name: str) -> list[Path]:
    """The files importing ``name`` (crashcourse.x.y) runs: each package's
    ``__init__.py`` on the way and the module itself; a package named whole
    (a string such as ``"crashcourse.workers.frameworks"``, whose modules a
    checkpoint runs with ``-m``) brings every module under it."""
    parts = name.split(".")[1:]
    found = [PACKAGE_DIR / "__init__.py"]
    here = PACKAGE_DIR
    for part in parts:
        here = here / part
        if (here / "__init__.py").is_file():
            found.append(here / "__init__.py")
        elif here.with_suffix(".py").is_file():
            found.append(here.with_suffix(".py"))
            return found
        else:
            return found  # a name inside a module (from x import NAME)
    return found + sorted(here.rglob("*.py"))


def sources_used(script: str | Path) -> list[str]:
    """The manifest keys (``source_hashes``) of what ``script`` runs: itself,
    and every crashcourse module it reaches by an import anywhere in a file
    (a lazy one inside a function too) or by a string naming a module (a
    child started with ``-m``), followed through each module reached."""
    script = Path(script)
    todo, seen = [script], set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        inside = path.resolve().is_relative_to(PACKAGE_DIR)
        where = path.resolve().relative_to(PACKAGE_DIR).parent.parts if inside else ()
        package = ["crashcourse", *where] if inside else None
        names = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level and package is not None:
                    up = package[:len(package) - node.level + 1]
                    base = ".".join([*up, base] if base else up)
                names += [f"{base}.{alias.name}" for alias in node.names] + [base]
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                names += MODULE_NAME.findall(node.value)
        for name in names:
            if name.startswith("crashcourse."):
                todo += [f for f in _module_files(name) if f not in seen]
    keys = [f"script/{script.name}"]
    keys += sorted(f"crashcourse/{p.resolve().relative_to(PACKAGE_DIR).as_posix()}"
                   for p in seen if p != script)
    return keys


def drifted(document: dict, script: str | Path) -> list[str]:
    """Each source ``script`` runs whose hash in the evidence's manifest is
    not the tree's (or is not recorded): empty when the evidence was measured
    on the code in the tree, as far as what it ran."""
    recorded = document["manifest"]["sources_sha256"]
    now = source_hashes(script)
    return [key for key in sources_used(script) if recorded.get(key) != now.get(key)]
