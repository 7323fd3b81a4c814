"""The house rules a reader relies on, checked on the files themselves.

One kit for every chapter, one spelling per idea, the outside world in
``crashcourse.services``, and runtime modules that never lean on the running example.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
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


@pytest.mark.parametrize("module", [m for m in MODULES if m.parent == PACKAGE],
                         ids=lambda p: p.stem)
def test_runtime_modules_never_import_the_running_example(module):
    assert "crashcourse.example" not in imported_modules(module)


def test_the_payment_service_lives_with_the_outside_world():
    assert (PACKAGE / "services" / "payments.py").is_file()
    assert not (PACKAGE / "payments.py").exists()


def test_chapter_03_does_not_lean_on_chapter_04():
    assert "crashcourse.budget" not in imported_modules(PACKAGE / "authority.py")


VALIDATORS = ("canonical", "check_text", "check_count", "check_amount",
              "check_currency", "clock")


@pytest.mark.parametrize("module", [m for m in MODULES if m.name != "validate.py"],
                         ids=lambda p: p.stem)
def test_the_door_checks_are_written_once(module):
    defined = {node.name for node in ast.walk(ast.parse(module.read_text()))
               if isinstance(node, ast.FunctionDef)}
    assert defined.isdisjoint(VALIDATORS), "import them from crashcourse.validate"
