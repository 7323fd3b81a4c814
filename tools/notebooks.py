"""Build and check the book's notebooks.

    python tools/notebooks.py build [00 01 ...]   regenerate .ipynb from .md and run it
    python tools/notebooks.py check               every pair in sync and fully executed

The .md file (MyST via jupytext) is the source; the .ipynb is generated from it,
executed top to bottom in a fresh kernel, and committed with its outputs. The
direction is one-way on purpose: `jupytext --sync` trusts file times and can
silently revert an edit.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import jupytext
import nbformat
from nbclient import NotebookClient
from nbconvert.preprocessors import CoalesceStreamsPreprocessor

BOOK = Path(__file__).resolve().parent.parent / "book"
CELL_TIMEOUT = 180


def chapters(selected: list[str]) -> list[Path]:
    """The chapter sources, all or those whose number is in ``selected``."""
    sources = sorted(BOOK.glob("[0-9][0-9]_*.md"))
    if selected:
        sources = [s for s in sources if s.name[:2] in selected]
        missing = set(selected) - {s.name[:2] for s in sources}
        if missing:
            raise SystemExit(f"no chapter numbered {sorted(missing)} in {BOOK}")
    return sources


def tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def from_source(md: Path) -> nbformat.NotebookNode:
    """Read a chapter's .md into a notebook with stable cell ids and metadata."""
    notebook = jupytext.read(md)
    # The kernel's own display name (ipykernel's): JupyterLab rewrites any other
    # on its first save, and reading a chapter must leave git status clean.
    notebook.metadata = {
        "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python",
                       "name": "python3"},
        "language_info": {"name": "python"},
    }
    for index, cell in enumerate(notebook.cells):
        cell.id = f"c{index:03d}"  # stable ids keep diffs to what changed
        cell.metadata = {"tags": tags(cell)} if tags(cell) else {}
    return notebook


def build(md: Path) -> Path:
    """Regenerate and execute ``md``'s notebook; write it with outputs."""
    notebook = from_source(md)
    client = NotebookClient(
        notebook, timeout=CELL_TIMEOUT, kernel_name="python3",
        record_timing=False, resources={"metadata": {"path": str(BOOK)}},
    )
    started = time.monotonic()
    client.execute()
    # One stream output per cell and stream, however the kernel happened to
    # flush it: the stored notebook then depends on what was printed, not when.
    notebook, _ = CoalesceStreamsPreprocessor().preprocess(notebook, {})
    target = md.with_suffix(".ipynb")
    nbformat.write(notebook, target)
    print(f"built {target.name} in {time.monotonic() - started:.1f} s", file=sys.stderr)
    return target


def pair_problems(md: Path) -> list[str]:
    """Why ``md`` and its .ipynb disagree (an empty list when they agree)."""
    ipynb = md.with_suffix(".ipynb")
    if not ipynb.exists():
        return [f"{ipynb.name} is missing: run make notebooks CHAPTERS={md.name[:2]}"]
    source, built = from_source(md).cells, nbformat.read(ipynb, as_version=4).cells
    if len(source) != len(built):
        return [f"{md.name}: {len(source)} cells in .md, {len(built)} in .ipynb"]
    problems = []
    for index, (a, b) in enumerate(zip(source, built, strict=True)):
        if (a.cell_type, a.source, tags(a)) != (b.cell_type, b.source, tags(b)):
            problems.append(f"{md.name}: cell {index} differs between .md and .ipynb")
    counts = [c.get("execution_count") for c in built if c.cell_type == "code"]
    if counts != list(range(1, len(counts) + 1)):
        problems.append(f"{ipynb.name}: execution counts are {counts}, not 1..n")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("build", "check"))
    parser.add_argument("chapters", nargs="*", help="chapter numbers, e.g. 00 02")
    args = parser.parse_args(argv)
    if args.command == "build":
        for md in chapters(args.chapters):
            build(md)
        return 0
    problems = [p for md in chapters(args.chapters) for p in pair_problems(md)]
    print("\n".join(problems) or "all chapter pairs in sync")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
