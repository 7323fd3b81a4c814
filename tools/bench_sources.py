"""Which sources each committed bench result ran on, and what changed since.

    python tools/bench_sources.py record NAME.json [...]   after a rerun
    python tools/bench_sources.py acknowledge NAME.json "what it does"
    python tools/bench_sources.py check                    exit 1 on drift

A bench result under ``bench/results/`` is measured once, on the tree of the
commit that wrote it; the book quotes it long after. ``bench/results/
SOURCES.json`` names, per result, the bench that wrote it, that commit
(``measured_at``) and the sha256 of every file the bench runs there
(``sources_of``: the script, its sibling modules, the ``crashcourse``
modules it imports or starts). ``changed_since`` acknowledges the files that
differ in the tree now (``files``: each one's sha256 now, ``null``: gone) and
says ``what`` those changes do to the figures the book quotes.
``tests/book/test_bench_sources.py`` fails on any other difference: rerun the
bench (then ``record`` it), or ``acknowledge`` the change with what it does
to the numbers the book quotes.
"""

from __future__ import annotations

import ast
import hashlib
import json
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ROOT / "bench" / "results" / "SOURCES.json"


def sources_of(script: str | Path, root: str | Path) -> list[str]:
    """The files a script under ``root`` (a checkout) runs, as paths relative
    to ``root``, sorted: the script itself; every module beside it that it
    imports or names in a string (``"child.py"``); and every ``crashcourse``
    module it imports or names (``"crashcourse.workers.x"``, started as a
    child), with the packages above each, transitively.

    Read from the source alone (nothing is imported), so it also reads an old
    commit's tree; a module reached only through a computed name is missed."""
    root = Path(root).resolve()
    source = root / "src"

    def module_file(name: str) -> Path | None:
        base = source.joinpath(*name.split("."))
        for candidate in (base / "__init__.py", base.with_suffix(".py")):
            if candidate.is_file():
                return candidate
        return None

    def named(path: Path) -> tuple[set[str], set[Path]]:
        package: tuple[str, ...] = ()
        if path.is_relative_to(source):
            package = path.relative_to(source).with_suffix("").parts[:-1]
        modules, siblings = set(), set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                modules.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = list(package[:len(package) - node.level + 1])
                else:
                    base = []
                module = ".".join(base + ([node.module] if node.module else []))
                modules.add(module)
                modules.update(f"{module}.{alias.name}" for alias in node.names)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                if node.value.startswith("crashcourse."):
                    modules.add(node.value)
                elif node.value.endswith(".py") and "/" not in node.value:
                    siblings.add(path.parent / node.value)
        siblings.update(path.parent / f"{name}.py" for name in modules)
        return ({name for name in modules if name.split(".")[0] == "crashcourse"},
                {sibling for sibling in siblings
                 if sibling.is_file() and not sibling.is_relative_to(source)})

    found: set[Path] = set()
    files = [root / script]
    while files:
        path = files.pop()
        if path in found:
            continue
        found.add(path)
        modules, siblings = named(path)
        files.extend(siblings)
        for name in modules:
            parts = name.split(".")
            for end in range(1, len(parts) + 1):
                module = module_file(".".join(parts[:end]))
                if module is not None:
                    files.append(module)
    return sorted(path.relative_to(root).as_posix() for path in found)


def hashes(paths: list[str], root: str | Path) -> dict[str, str]:
    root = Path(root)
    return {path: hashlib.sha256((root / path).read_bytes()).hexdigest()
            for path in paths}


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], check=True,
                          capture_output=True, text=True).stdout


def tree_at(commit: str, into: Path) -> Path:
    """The files of ``commit`` (bench/ and src/) unpacked under ``into``."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", commit, "bench", "src"],
        check=True, capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def sources_at(commit: str, script: str) -> dict[str, str]:
    """sha256 of every file ``script`` runs, in ``commit``'s tree."""
    with tempfile.TemporaryDirectory() as folder:
        tree = tree_at(commit, Path(folder))
        return hashes(sources_of(script, tree), tree)


Drift = dict[str, tuple[str | None, str | None]]


def drift(entry: dict, root: str | Path = ROOT) -> Drift:
    """Per file that differs: (sha256 when measured, sha256 now); None: absent."""
    now = hashes(sources_of(entry["bench"], root), root)
    then = entry["sources_sha256"]
    return {path: (then.get(path), now.get(path))
            for path in sorted(set(then) | set(now)) if then.get(path) != now.get(path)}


def acknowledged(entry: dict, root: str | Path = ROOT) -> dict[str, str | None]:
    """The drift as ``changed_since["files"]`` must spell it: path -> the
    sha256 now (None: gone)."""
    return {path: now for path, (_, now) in drift(entry, root).items()}


def unacknowledged(entry: dict, root: str | Path = ROOT) -> dict[str, str | None]:
    """What differs from the measured tree and is not acknowledged as it is
    now (or is acknowledged with no word on what it does to the figures);
    an acknowledgement of a file that is back as measured counts too."""
    known = entry.get("changed_since", {})
    files = known.get("files", {}) if known.get("what", "").strip() else {}
    now = acknowledged(entry, root)
    return {path: now.get(path) for path in sorted(set(now) | set(files))
            if path not in now or path not in files or files[path] != now[path]}


def load() -> dict:
    return json.loads(SOURCES.read_text())


def record(names: list[str]) -> None:
    document = load() if SOURCES.exists() else {"results": {}}
    for name in names:
        entry = document["results"][name]  # the bench is named by hand, once
        commit = git("log", "-1", "--format=%H", "--",
                     f"bench/results/{name}").strip()
        entry.update(measured_at=commit,
                     sources_sha256=sources_at(commit, entry["bench"]))
        entry.pop("changed_since", None)
    save(document)


def acknowledge(name: str, what: str) -> None:
    """Write ``name``'s drift as it is now, with ``what`` it does to the figures
    (a sentence a reviewer reads: say it, never just re-stamp), after what the
    earlier acknowledgements since its measurement said."""
    document = load()
    entry = document["results"][name]
    before = entry.get("changed_since", {}).get("what")  # kept: the record grows
    entry["changed_since"] = {"files": acknowledged(entry),
                              "what": f"{before} Then: {what}" if before else what}
    save(document)


def save(document: dict) -> None:
    SOURCES.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")


def check() -> int:
    status = 0
    for name, entry in load()["results"].items():
        for path, now in unacknowledged(entry).items():
            status = 1
            print(f"{name}: {path} differs from {entry['measured_at'][:7]}"
                  f" ({'gone' if now is None else now[:12]}) and is not acknowledged")
    return status


if __name__ == "__main__":
    if sys.argv[1:2] == ["record"] and sys.argv[2:]:
        record(sys.argv[2:])
    elif sys.argv[1:2] == ["acknowledge"] and len(sys.argv) == 4:
        acknowledge(sys.argv[2], sys.argv[3])
    elif sys.argv[1:] == ["check"]:
        sys.exit(check())
    else:
        sys.exit(__doc__)
