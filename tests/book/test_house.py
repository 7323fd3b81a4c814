"""The house rules a reader relies on, checked on the files themselves.

One kit for every chapter, one spelling per idea, the outside world in
``crashcourse.services``, and runtime modules that never lean on the running example.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "crashcourse"
CHAPTERS = sorted((ROOT / "book").glob("[0-9][0-9]_*.md"))
MODULES = sorted(PACKAGE.rglob("*.py"))
# Retired spellings of one idea each; the book, the runtime and the
# checkpoints use the name on the right.
RETIRED = {
    r"\bop_key\b": "operation_key",
    r"\bop_id\b": "operation_key",
    r"\boperation[ _]ids?\b": "operation key",
    r"\bholdings\b": "claims (the table)",
    r"\bpayments\.initialize\b": "payments.install",
}
CHECKED_FOR_SPELLING = [
    *MODULES, *CHAPTERS, *sorted((ROOT / "checkpoints").glob("*.py")),
    ROOT / "README.md", ROOT / "CONTRIBUTING.md",
]


def code_cells(md: Path) -> list[str]:
    """The code cells of a chapter source, as text."""
    return re.findall(r"```\{code-cell\}[^\n]*\n(.*?)```", md.read_text(), re.S)


@pytest.mark.parametrize("md", CHAPTERS, ids=lambda p: p.stem)
def test_every_chapter_uses_the_kit_and_defines_no_check_of_its_own(md):
    code = "\n".join(code_cells(md))
    assert "from crashcourse.book import" in code
    assert not re.search(r"^def check\(", code, re.M)
    assert "subprocess.run(" not in code or "checkpoints" not in code, (
        "run a checkpoint with crashcourse.book.run_checkpoint")


@pytest.mark.parametrize("path", CHECKED_FOR_SPELLING, ids=lambda p: p.name)
def test_one_spelling_per_idea(path):
    text = path.read_text()
    found = {old: new for old, new in RETIRED.items()
             if re.search(old, text, re.I)}
    assert found == {}, f"{path.name}: retired names, use {found}"


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return names


# The floors below the parent side never lean on the running example; the
# parent side (lab) holds it, and a worker program may build a world with it
# for its caller (workers.journal_worker.build_world), never for itself.
BELOW_THE_EXAMPLE = [m for m in MODULES
                     if not {"lab", "workers", "figures", "adapters"}
                     & set(m.relative_to(PACKAGE).parts)]


@pytest.mark.parametrize("module", BELOW_THE_EXAMPLE,
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_runtime_modules_never_import_the_running_example(module):
    assert "crashcourse.lab.example" not in imported_modules(module)


def test_the_payment_service_lives_with_the_outside_world():
    assert (PACKAGE / "services" / "payments" / "__init__.py").is_file()
    assert not (PACKAGE / "payments.py").exists()


def test_chapter_03_does_not_lean_on_chapter_04():
    authority = PACKAGE / "services" / "payments" / "authority.py"
    assert "crashcourse.services.payments.budget" not in imported_modules(authority)


VALIDATORS = ("canonical", "check_text", "check_count", "check_amount",
              "check_currency", "clock")


@pytest.mark.parametrize("module", [m for m in MODULES if m.name != "validate.py"],
                         ids=lambda p: p.stem)
def test_the_door_checks_are_written_once(module):
    defined = {node.name for node in ast.walk(ast.parse(module.read_text()))
               if isinstance(node, ast.FunctionDef)}
    assert defined.isdisjoint(VALIDATORS), "import them from crashcourse.validate"


def test_the_package_has_few_doors_and_each_says_what_is_behind_it():
    """Subpackages by topic: a reader finds an idea by its noun among a few
    entries, and every subpackage's docstring says what it holds."""
    entries = [p for p in PACKAGE.iterdir()
               if p.name != "__init__.py" and not p.name.startswith(("_", "."))
               and (p.suffix == ".py" or (p / "__init__.py").is_file())]
    assert len(entries) <= 16, sorted(p.name for p in entries)
    for package in (p for p in entries if p.is_dir()):
        doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text()))
        assert doc and len(doc.split()) >= 8, f"{package.name}: say what it holds"


# The floors, lowest first: a module imports only from rooms on floors below
# its own (CONTRIBUTING, "Where things live"). A room is a subpackage or a
# top-level module; the running example (lab.example) is a room of its own,
# under the workers that build their worlds with it and the lab that runs them.
FLOORS = {
    "crashcourse": 0, "validate": 0, "boundary": 0, "waiting": 0,
    "store": 1,
    "effects": 2, "control": 2,
    "services": 3, "workflow": 3,
    "claims": 4,
    "journal": 5,
    "adapters": 6, "example": 6,
    "workers": 7,
    "lab": 8, "powerloss": 8, "figures": 8,
    "killtest": 9, "book": 9,
}


def room(module: str) -> str | None:
    """The room a dotted module name lives in, or None outside the package."""
    parts = module.split(".")
    if parts[0] != "crashcourse":
        return None
    if parts[1:3] == ["lab", "example"]:
        return "example"
    return parts[1] if len(parts) > 1 else "crashcourse"


def imports_between_rooms() -> set[tuple[str, str, str]]:
    """(room, imported room, file) for every import in the package, lazy ones
    (inside a function) included; ``from crashcourse import x`` counts as x."""
    found = set()
    for path in MODULES:
        name = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        here = room(name.removesuffix(".__init__"))
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
                if node.module in ("crashcourse", "crashcourse.lab"):
                    names = [f"{node.module}.{alias.name}" for alias in node.names]
            else:
                continue
            for imported in filter(None, map(room, names)):
                if imported != here:
                    found.add((here, imported, str(path.relative_to(PACKAGE))))
    return found


def test_every_room_has_a_floor():
    rooms = {room(".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts)
                  .removesuffix(".__init__")) for p in MODULES}
    assert rooms - set(FLOORS) == set(), "give each new room a floor in FLOORS"


def test_imports_run_one_way_down_the_floors():
    """No room leans on one at its own floor or above: no cycle between
    subpackages (the old lab <-> workers), and the runtime below never reaches
    the programs, the harness or the book's kit above it."""
    upward = sorted((f"{path}: {here} (floor {FLOORS.get(here)}) imports {there}"
                     f" (floor {FLOORS.get(there)})")
                    for here, there, path in imports_between_rooms()
                    if FLOORS.get(there, 99) >= FLOORS.get(here, -1))
    assert upward == []


def test_the_floor_check_sees_an_import_that_runs_up(tmp_path, monkeypatch):
    """Its negative control: a store module importing a worker is found."""
    fake = tmp_path / "crashcourse"
    (fake / "store").mkdir(parents=True)
    (fake / "store" / "__init__.py").write_text(
        "def f():\n    from crashcourse.workers import options\n")
    monkeypatch.setattr(__import__(__name__, fromlist=["x"]), "PACKAGE", fake)
    monkeypatch.setattr(__import__(__name__, fromlist=["x"]), "MODULES",
                        [fake / "store" / "__init__.py"])
    assert imports_between_rooms() == {("store", "workers", "store/__init__.py")}
