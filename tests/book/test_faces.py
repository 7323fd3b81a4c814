"""The book reaches the runtime through its public faces (issue 33).

Every room a chapter, an exercise or an answer imports from declares a face,
``__all__``: the names a reader may import from it. A subpackage's face
lists the modules of it the book may import (``from crashcourse.claims
import fence``); anything else in it is the runtime's own, free to change.
The faces are read from the source (``ast``), so nothing is imported here.
What is not checked: an attribute reached through a module the face lists
(``fence.stale_reason``): the face names the module, not each of its names.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "crashcourse"
READERS = [*sorted(ROOT.glob("book/[0-9][0-9]_*.md")),
           *sorted(ROOT.glob("exercises/**/*.py")),
           *sorted(ROOT.glob("solutions/**/*.py"))]


def code_cells(md: Path) -> list[str]:
    """A chapter source's code cells, their options (``:tags:``) left out."""
    cells, cell = [], None
    for line in md.read_text().splitlines():
        if cell is None:
            if line.startswith("```{code-cell}"):
                cell = []
        elif line.rstrip() == "```":
            while cell and cell[0].startswith(":"):
                cell.pop(0)
            cells.append("\n".join(cell))
            cell = None
        else:
            cell.append(line)
    return cells


def imports_of(path: Path) -> list[tuple[str, str | None]]:
    """(module, name) for each ``from crashcourse... import name`` in
    ``path``, and (module, None) for each ``import crashcourse...``."""
    texts = code_cells(path) if path.suffix == ".md" else [path.read_text()]
    found = []
    for text in texts:
        for node in ast.walk(ast.parse(text)):
            if (isinstance(node, ast.ImportFrom) and node.module
                    and node.module.split(".")[0] == "crashcourse"):
                found += [(node.module, alias.name) for alias in node.names]
            elif isinstance(node, ast.Import):
                found += [(alias.name, None) for alias in node.names
                          if alias.name.split(".")[0] == "crashcourse"]
    return found


def source_of(module: str, package: Path) -> Path | None:
    """The file of a dotted ``crashcourse`` module, or None."""
    base = package.parent.joinpath(*module.split("."))
    for candidate in (base / "__init__.py", base.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def face(module: str, package: Path) -> set[str] | None:
    """The names in a module's ``__all__`` (a literal list or tuple of
    strings), or None when it declares none."""
    path = source_of(module, package)
    if path is None:
        return None
    for node in ast.parse(path.read_text()).body:
        if (isinstance(node, ast.Assign)
                and any(getattr(t, "id", None) == "__all__" for t in node.targets)):
            return set(ast.literal_eval(node.value))
    return None


def outside_the_faces(readers: list[Path], package: Path) -> list[str]:
    """Every import of the book not in a face: the name must be in its
    module's face, and each module on the way down in its parent's."""
    refused = []
    for path in readers:
        for module, name in imports_of(path):
            parts = module.split(".") + ([name] if name else [])
            for depth in range(1, len(parts)):
                parent, child = ".".join(parts[:depth]), parts[depth]
                names = face(parent, package)
                if names is None or child not in names:
                    refused.append(f"{path.relative_to(path.parents[1])}: {child}"
                                   f" is not in {parent}.__all__")
                    break
    return sorted(set(refused))


def test_the_book_imports_only_names_in_a_face():
    assert outside_the_faces(READERS, PACKAGE) == [], (
        "add the name to the room's __all__ if it is public, or import it"
        " through a face that has it")


def test_every_name_in_a_face_is_there():
    """A face names only what its module defines, imports or holds as a
    submodule: ``from room import *`` never fails."""
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        module = module.removesuffix(".__init__")
        names = face(module, PACKAGE)
        if names is None:
            continue
        tree = ast.parse(path.read_text())
        bound = {alias.asname or alias.name.split(".")[0]
                 for node in ast.walk(tree)
                 if isinstance(node, (ast.Import, ast.ImportFrom))
                 for alias in node.names}
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
                bound.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = (node.targets if isinstance(node, ast.Assign)
                           else [node.target])
                bound.update(name.id for t in targets for name in ast.walk(t)
                             if isinstance(name, ast.Name))
        if path.name == "__init__.py":
            bound.update(p.stem for p in path.parent.glob("*.py"))
            bound.update(p.name for p in path.parent.iterdir()
                         if (p / "__init__.py").is_file())
        missing += [f"{module}.{name}" for name in sorted(names - bound)]
    assert missing == [], "a face names what its module does not hold"


@pytest.mark.parametrize("line, refused", [
    ("from crashcourse.claims import _backend",
     "_backend is not in crashcourse.claims.__all__"),
    ("from crashcourse.claims.turns import first_fit",
     "turns is not in crashcourse.claims.__all__"),
    ("import crashcourse.store.rows", "rows is not in crashcourse.store.__all__"),
])
def test_the_face_check_sees_a_name_outside_the_faces(tmp_path, line, refused):
    """Its negative control: an exercise importing a name the face leaves
    out (a module's own helper, a module no face lists) is found."""
    (tmp_path / "exercises" / "ch99").mkdir(parents=True)
    exercise = tmp_path / "exercises" / "ch99" / "stub.py"
    exercise.write_text(f"{line}\nfrom crashcourse.claims import fence\n")
    assert outside_the_faces([exercise], PACKAGE) == [f"ch99/stub.py: {refused}"]
