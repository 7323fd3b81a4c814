"""One place for each difference between SQLite and PostgreSQL (chapter 10):
``crashcourse.store.dialect``, read through ``store.dialect(conn)``; one ``Row``
and one error mapping (``crashcourse.store.rows``); imports that run one way.

The cases that take ``conn`` run on both backends (``store_at``)."""

from __future__ import annotations

import ast
import sqlite3
from pathlib import Path

import pytest

from crashcourse import claims, control, store
from crashcourse.claims import fence
from crashcourse.claims import postgres as claims_postgres
from crashcourse.store import immediate, rows
from crashcourse.store.dialect import POSTGRES, SQLITE

SRC = Path(__file__).resolve().parents[2] / "src" / "crashcourse"


# ``conn`` (conftest): a fresh, empty store on each backend.


def test_a_connection_says_its_database(conn, backend):
    assert store.dialect(conn) is {"sqlite": SQLITE, "postgres": POSTGRES}[backend]
    assert store.dialect(sqlite3.connect(":memory:")) is SQLITE


def test_whether_a_table_exists_is_a_read_on_both(conn):
    assert not store.table_exists(conn, "runtime_control")
    assert not control.is_paused(conn)  # a read: no table, not paused
    assert not store.table_exists(conn, "runtime_control")  # and none made
    control.install(conn)
    assert store.table_exists(conn, "runtime_control")


def test_the_tables_of_a_store_are_listed_on_both(conn):
    assert "runtime_control" not in store.tables(conn), (
        "a store with nothing installed listed runtime_control")
    control.install(conn)
    assert {"runtime_control", "scheduler_switch"} <= store.tables(conn), (
        "the tables control.install made were not listed")


def test_an_address_picks_its_backend_once_from_the_registry():
    assert store.dialect_for("postgresql://u@h/db?schema=s") is POSTGRES, (
        "a postgresql:// address was not the server's backend")
    assert store.dialect_for("postgres://u@h/db") is POSTGRES, (
        "a postgres:// address was not the server's backend")
    for path in ("shop.db", "/tmp/postgresql://x", Path("shop.db")):
        assert store.dialect_for(path) is SQLITE, (
            f"{path!r} was not read as a SQLite file")
    assert store.on_server("postgresql://u@h/db") and not store.on_server("a.db"), (
        "on_server disagreed with the registry")


@pytest.mark.parametrize("table", ["scheduler_switch", "refusals", "transcript"])
def test_a_numbered_key_is_never_given_twice(conn, table):
    """Bug: SQLite's INTEGER PRIMARY KEY without AUTOINCREMENT gives the
    largest number again once its row is deleted, so evidence that names a
    row by its number (a run's ``allowed_by``, a refusal) would then name
    another. A server's identity never does; the dialect keeps them equal."""
    control.install(conn)
    fence.install(conn)
    row = {"scheduler_switch": "INSERT INTO scheduler_switch (state, who, reason,"
                               " at) VALUES ('stopped', 'p', 'r', 0)",
           "refusals": "INSERT INTO refusals (work_id, generation, owner, action,"
                       " reason, at) VALUES ('w', 1, 'o', 'a', 'r', 0)",
           "transcript": None}[table]
    if row is None:  # a transcript row needs its work
        claims.enqueue(conn, "phone:1", "s", "restock")
        row = ("INSERT INTO transcript (work_id, generation, message)"
               " SELECT id, 1, '{}' FROM work")
    numbered = []
    for _ in range(2):
        with immediate(conn):
            numbered.append(conn.execute(row + " RETURNING seq").fetchone()[0])
            conn.execute(f"DELETE FROM {table}")
    assert numbered[1] > numbered[0]


def test_immediate_runs_its_first_statement_under_the_lock_and_rolls_back(conn):
    conn.execute("CREATE TABLE t (k TEXT PRIMARY KEY)")
    with immediate(conn, then="SELECT count(*) AS n FROM t") as found:
        assert found.fetchone()[0] == 0
        conn.execute("INSERT INTO t VALUES (:k)", {"k": "a"})
    with pytest.raises(RuntimeError), immediate(conn, then="SELECT 1 AS one"):
        conn.execute("INSERT INTO t VALUES (:k)", {"k": "b"})
        raise RuntimeError("the block failed")
    assert [row[0] for row in conn.execute("SELECT k FROM t")] == ["a"]


def test_one_row_reads_by_position_and_by_name():
    row = rows.Row(rows.columns(["k", "v"]), ("a", 1.5))
    assert (row[0], row["v"], row.keys(), dict(row)) == (
        "a", 1.5, ["k", "v"], {"k": "a", "v": 1.5})
    with pytest.raises(KeyError):
        row["missing"]


def test_one_error_mapping_first_match_then_the_default():
    class Theirs(Exception):
        pass

    class Busy(Theirs):
        pass

    table = ((Busy, sqlite3.OperationalError, rows.LOCKED),
             (Theirs, sqlite3.IntegrityError, ""))
    busy = rows.as_sqlite(Busy("waited"), table)
    assert type(busy) is sqlite3.OperationalError and "locked" in str(busy)
    assert type(rows.as_sqlite(Theirs("x"), table)) is sqlite3.IntegrityError
    assert rows.as_sqlite(ValueError("y"), table) is None  # the driver's own
    assert type(rows.as_sqlite(ValueError("y"), table,
                               sqlite3.DatabaseError)) is sqlite3.DatabaseError


# --- where the differences are written ---------------------------------------


def imports_of(path: Path, modules=frozenset()) -> set[str]:
    """The crashcourse modules ``path`` imports, at the top or in a function.

    ``from crashcourse.claims import work`` imports the module ``claims.work``
    (Python runs the package's ``__init__`` first, which is not an edge of
    the code's own); a name that is not a module is the package's."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                found.add(full if full in modules else node.module)
    return {name for name in found if name.startswith("crashcourse.")}


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_no_two_modules_import_each_other_even_lazily():
    """Bug: ``store`` imported the adapter and the adapter ``store``;
    ``claims`` handed over to ``claims.postgres``, which imported ``claims``."""
    modules = {module_name(path): path for path in SRC.rglob("*.py")}
    graph = {name: (imports_of(path, modules.keys()) & modules.keys()) - {name}
             for name, path in modules.items()}

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), [start]
        while todo:
            name = todo.pop()
            if name == goal:
                return True
            if name not in seen:
                seen.add(name)
                todo.extend(graph[name])
        return False

    cycles = sorted((name, other) for name, imported in graph.items()
                    for other in imported if reaches(other, name))
    assert cycles == []
    assert "crashcourse.store" not in graph["crashcourse.store.postgres"]
    assert "crashcourse.claims" not in graph["crashcourse.claims.postgres"]


# Words only a PostgreSQL store understands: outside the dialect, the adapter,
# the server's own claim (complete SQL of its own) and the server process.
SERVER_WORDS = ("to_regclass", "GENERATED ALWAYS AS IDENTITY", "information_schema",
                "pg_advisory", "FOR UPDATE", "json_array_elements", "clock_timestamp",
                "pg_backend_pid")
SERVER_MODULES = {"dialect.py", "pgstore.py", "claims_server.py", "postgres.py"}


def test_a_servers_spellings_are_in_the_dialect_not_in_each_module():
    spelled = sorted(
        (path.name, word) for path in SRC.rglob("*.py")
        if path.name not in SERVER_MODULES and "adapters" not in path.parts
        for word in SERVER_WORDS if word in path.read_text())
    assert spelled == []


def test_no_module_asks_which_database_by_its_name():
    asked = sorted(str(path.relative_to(SRC)) for path in SRC.rglob("*.py")
                   if "WORDS[" in (text := path.read_text())
                   or 'dialect(conn) == "' in text or 'dialect(conn) != "' in text
                   or ('getattr(conn, "dialect"' in text
                       and path.relative_to(SRC) != Path("store", "__init__.py")))
    assert asked == []


# How a module outside ``store`` could still ask which backend it is on,
# instead of asking the backend object (``store.dialect(conn)``).
BRANCHES = {
    "identity": r"\bis (not )?(POSTGRES|SQLITE)\b|BACKENDS\[",
    "address": r"\bon_server\(",
    "one_writer": r"\.one_writer\b",
    "catalogue": r"sqlite_master",
    "adapter": r"store import postgres\b|store\.postgres import",
}
# Each place that still branches, and why it is not the backend's to answer.
STILL_BRANCHES = {
    ("claims/__init__.py", "identity"): "the claim registry: claims sit above"
        " the store's floor, so the store cannot name their modules",
    ("adapters/__init__.py", "address"): "a SQLite journal is kept open per"
        " file and process; a server's is opened per call",
    ("journal/__init__.py", "one_writer"): "the -wal checkpoint pragma exists"
        " only where one writer keeps a -wal",
    ("services/broker.py", "catalogue"): "the attached broker file's own"
        " catalogue (broker.sqlite_master): ATTACH is SQLite's alone",
    ("lab/two_hosts.py", "adapter"): "chapter 10's world is a server: it makes"
        " and drops schemas through the adapter",
    ("lab/paused_stop.py", "address"): "the stop against a paused holder on"
        " either backend: on a server it watches the server's own sessions"
        " (pg_stat_activity) and sets its session's timeouts; on SQLite, the"
        " thread",
    ("lab/paused_stop.py", "identity"): "the holder's retry after the server"
        " ended its connection, which only a server does",
}


def test_only_the_listed_modules_still_branch_on_the_backend():
    """Bug: a module wrote its own ``sqlite_master`` query or asked ``is not
    POSTGRES``, so a third backend would have touched it too; every other
    module asks the backend object. A branch gone from the list's module
    must leave the list (the sets are equal)."""
    import re

    found = {(str(path.relative_to(SRC)), kind)
             for path in SRC.rglob("*.py")
             if "store" not in path.relative_to(SRC).parts
             for kind, pattern in BRANCHES.items()
             if re.search(pattern, path.read_text())}
    differs = sorted(found ^ set(STILL_BRANCHES))
    assert found == set(STILL_BRANCHES), (
        "a module outside store branches on the backend where the list says"
        f" it does not, or no longer where it says it does: {differs}")


def test_the_ordinary_pick_on_a_server_says_where_it_looks_once():
    """Its rule is where it looks (queued turns): the status is read once,
    not as a look and again as ORDINARY's two tests of the same row."""
    queued = claims_postgres.pick_sql(claims.ORDINARY, "queued", False, False)
    assert queued.count("item.status") == 1
    named = claims_postgres.pick_sql(claims.ORDINARY, "work_id", False, False)
    assert claims.ORDINARY in named  # a named turn: the rule is needed whole


def test_a_lock_waited_out_is_told_from_a_fault(tmp_path):
    """SQLite's own busy error and an adapter's mapped one (``rows.LOCKED``)
    are a lock waited out; a missing table is a fault."""
    path = tmp_path / "held.db"
    holder, late = store.connect(path), store.connect(path, busy_timeout_ms=0)
    try:
        with immediate(holder):
            with pytest.raises(sqlite3.OperationalError) as busy:
                with immediate(late):
                    pass
                pytest.fail("a second writer began while the first held the lock")
        with pytest.raises(sqlite3.OperationalError) as fault:
            late.execute("SELECT * FROM nowhere")
            pytest.fail("a read of a missing table returned rows")
    finally:
        holder.close()
        late.close()
    assert store.lock_waited_out(busy.value), f"{busy.value} read as a fault"
    assert not store.lock_waited_out(fault.value), f"{fault.value} read as busy"
    mapped = sqlite3.OperationalError(rows.LOCKED + "canceling statement")
    assert store.lock_waited_out(mapped), "an adapter's mapped lock read as a fault"
