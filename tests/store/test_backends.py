"""Every module that installs tables in a store says which databases it runs
on (``RUNS_ON``), runs there, and refuses the others before writing (issue 33).

The modules are found from the source (a top-level ``def install(conn...)``),
so a new one is checked without being listed here. On each backend the
session offers (``store_at``: a SQLite file, a PostgreSQL schema), a module
that declares it installs twice (the second a no-op) and leaves tables
behind; a module that does not declare it raises ``UnsupportedBackend`` and
the store is left empty.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from crashcourse import claims, store
from crashcourse.store import UnsupportedBackend, opened
from crashcourse.store.dialect import POSTGRES, SQLITE

SRC = Path(__file__).resolve().parents[2] / "src"
BY_NAME = {"sqlite": SQLITE, "postgres": POSTGRES}
# What a module's install needs installed first, where it builds on another's
# tables instead of installing them itself.
NEEDS = {"crashcourse.claims.turns": claims.install_sqlite}


def installers() -> list[str]:
    """Every module under src/ with a top-level ``install`` whose first
    argument is a connection."""
    found = []
    for path in sorted((SRC / "crashcourse").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if any(isinstance(node, ast.FunctionDef) and node.name == "install"
               and node.args.args and node.args.args[0].arg == "conn"
               for node in tree.body):
            parts = path.relative_to(SRC).with_suffix("").parts
            found.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return found


MODULES = installers()


def tables(conn) -> set[str]:
    if store.dialect(conn) is POSTGRES:
        query = ("SELECT table_name FROM information_schema.tables"
                 " WHERE table_schema = current_schema()")
    else:
        query = "SELECT name FROM sqlite_master WHERE type = 'table'"
    return {row[0] for row in conn.execute(query).fetchall()}


def test_the_installers_are_found():
    # the discovery itself: the modules the chapters install from are among them
    assert {"crashcourse.claims", "crashcourse.journal", "crashcourse.control",
            "crashcourse.workflow", "crashcourse.journal.decisions"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_each_installer_declares_the_databases_it_runs_on(name):
    runs_on = getattr(importlib.import_module(name), "RUNS_ON", None)
    assert isinstance(runs_on, tuple) and runs_on, (
        f"{name} installs tables but declares no RUNS_ON: which databases?")
    assert set(runs_on) <= {SQLITE, POSTGRES}


@pytest.mark.parametrize("name", MODULES)
def test_each_installer_runs_where_it_says_and_refuses_elsewhere(name, backend,
                                                                 store_at):
    module = importlib.import_module(name)
    with opened(store_at("store")) as conn:
        if BY_NAME[backend] not in module.RUNS_ON:
            with pytest.raises(UnsupportedBackend, match=f"not on {backend}"):
                module.install(conn)
            assert tables(conn) == set(), f"{name} wrote before it refused"
            return
        if name in NEEDS:
            NEEDS[name](conn)
        module.install(conn)
        made = tables(conn)
        module.install(conn)  # installing again changes nothing
        assert made and tables(conn) == made
