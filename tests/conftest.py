"""Shared fixtures: each checkpoint's quick run happens once per test session,
and a real supplier server process per test module that asks for one.

Several test files read the evidence of the same quick run (the shared contract
in checkpoints/test_quick.py, and each chapter's own checks). The run costs
dozens of real processes, so it is made once and shared, also across pytest-xdist
workers: a lock file in the session's common temp folder decides who runs it.
"""

from __future__ import annotations

import fcntl
import json
from contextlib import ExitStack
from pathlib import Path

import pytest

from crashcourse.book import CheckpointRun, start_checkpoint
from crashcourse.lab.harness import Harness
from crashcourse.services.supplier.process import start_supplier
from tests import scheduling

# `make check`'s scheduling (--dist loadscope, refined): tests/scheduling.py
pytest_collection_modifyitems = scheduling.pytest_collection_modifyitems
pytest_xdist_make_scheduler = scheduling.pytest_xdist_make_scheduler
pytest_unconfigure = scheduling.pytest_unconfigure


def shared_dir(tmp_path_factory, worker_id: str) -> Path:
    base = tmp_path_factory.getbasetemp()
    root = base if worker_id == "master" else base.parent  # common to all workers
    folder = root / "quick-checkpoints"
    folder.mkdir(exist_ok=True)
    return folder


@pytest.fixture(scope="session")
def measured_once_folder(tmp_path_factory, worker_id) -> Path:
    """Where the exercises' ``measured_once`` keeps this session's answer-free
    measurements (exercises/conftest.py): the folder the solutions' run uses,
    handed to the wrong answers' grading runs as CRASHCOURSE_MEASURED_ONCE."""
    folder = shared_dir(tmp_path_factory, worker_id).parent / "measured-once"
    folder.mkdir(exist_ok=True)
    return folder


@pytest.fixture(scope="session")
def quick_checkpoint(tmp_path_factory, worker_id):
    """``quick_checkpoint("ch02_recovery_study")`` → the session's CheckpointRun
    of ``--quick`` (``crashcourse.book.start_checkpoint``)."""
    folder = shared_dir(tmp_path_factory, worker_id)

    def run(name: str) -> CheckpointRun:
        output, record = folder / f"{name}.json", folder / f"{name}.run.json"
        with open(folder / f"{name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # the other worker waits, then reads
            if not record.exists():
                done = start_checkpoint(name, "--quick", output=output)
                record.write_text(json.dumps({"returncode": done.returncode,
                                              "stdout": done.stdout,
                                              "stderr": done.stderr}))
        ran = json.loads(record.read_text())
        return CheckpointRun(ran["returncode"], ran["stdout"], ran["stderr"], output)

    return run


@pytest.fixture(scope="module")
def suppliers(tmp_path_factory):
    """``suppliers(backend)`` → a real supplier HTTP server process, one per
    module and backend, started when first asked for, stopped (and reaped)
    after the module."""
    with Harness() as harness, ExitStack() as running:
        started = {}

        def supplier_for(backend: str):
            if backend not in started:
                db = tmp_path_factory.mktemp("s") / "sup.db"
                started[backend] = running.enter_context(start_supplier(harness, db))
            return started[backend]

        yield supplier_for


@pytest.fixture
def supplier(suppliers, request):
    """The module's real supplier; a test that runs on both backends gets one
    per backend, so a key the SQLite run placed is never a replay in the
    PostgreSQL run."""
    if "backend" in request.fixturenames:
        return suppliers(request.getfixturevalue("backend"))
    return suppliers("any")


# Chapter 10: the same runtime tests on both backends. ``pg_server`` is the
# session's PostgreSQL (started once per xdist worker, ~1 s; a reader's own
# server when CRASHCOURSE_PG_URL names one). ``store_at`` gives a test the
# address of a fresh, empty store by name: a SQLite file in tmp_path, or a URL
# naming a fresh schema on the server. A test that asks for ``store_at`` (or
# ``conn``, an open store with its tables installed) runs once per backend;
# one that must stay on one says why with a ``sqlite_only(why)`` marker.
@pytest.fixture(scope="session")
def pg_server():
    """The session's PostgreSQL server, or a skip that says why there is none."""
    from crashcourse.store import postgres_server

    if postgres_server.own_server() is None and postgres_server.binaries() is None:
        pytest.skip("no PostgreSQL: pip install pgserver, or set "
                    f"{postgres_server.URL_ENV}")
    with postgres_server.running() as server:  # the reader's own is never stopped
        yield server


BACKENDS = ("sqlite", "postgres")


def pytest_configure(config):
    scheduling.pytest_configure(config)
    for line in (
        "sqlite_only(why): run on SQLite alone, for the reason given in one line"
        " (a PRAGMA, a damaged file, the WAL, SQLite's own trace or lock)",
        "postgres_only(why): run on PostgreSQL alone, for the reason given",
        "installs(*installs): what the ``conn`` fixture installs, in order",
    ):
        config.addinivalue_line("markers", line)


def pytest_generate_tests(metafunc):
    """A test that reaches ``backend`` (through ``store_at`` or ``conn``) runs
    once per backend, unless a ``sqlite_only`` or ``postgres_only`` marker
    says, with its reason, why it runs on one."""
    if "backend" not in metafunc.fixturenames:
        return
    backends = BACKENDS
    for name, only in (("sqlite_only", "sqlite"), ("postgres_only", "postgres")):
        marker = metafunc.definition.get_closest_marker(name)
        if marker is not None:
            if not (marker.args and str(marker.args[0]).strip()):
                raise pytest.UsageError(f"{metafunc.definition.nodeid}: {name} "
                                        "needs its reason: why not both backends")
            backends = (only,)
    metafunc.parametrize("backend", backends)


@pytest.fixture
def store_at(backend, tmp_path, request):
    """``store_at("claims")`` → the address of a fresh, empty store on this
    test's backend: ``tmp_path/claims.db``, or ``postgresql://...?schema=...``
    (dropped after the test)."""
    if backend == "sqlite":
        yield lambda name: str(tmp_path / f"{name}.db")
        return
    import uuid

    from crashcourse.store import postgres as pgstore

    server, made = request.getfixturevalue("pg_server"), []

    def at(name: str) -> str:
        schema = f"t_{name}_{uuid.uuid4().hex[:10]}"
        pgstore.create_schema(server.url, schema)
        made.append(schema)
        joiner = "&" if "?" in server.url else "?"
        return f"{server.url}{joiner}schema={schema}"

    yield at
    if made:
        with pgstore.connect(server.url).raw as raw:
            for schema in made:
                raw.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture
def conn(store_at, request):
    """An open connection to a fresh store on this test's backend, with what
    the test's (or its module's) ``installs`` marker names installed, in
    order: ``pytest.mark.installs.with_args(orders.install)`` gives the
    agent's store (work, claims, fences, orders). Closed after the test.

    A test that is SQLite by nature (a PRAGMA, file damage, the WAL) says so
    with ``@pytest.mark.sqlite_only("why")`` and gets a SQLite file."""
    from crashcourse.store import opened

    marker = request.node.get_closest_marker("installs")
    with opened(store_at("store")) as conn:
        for install in marker.args if marker else ():
            install(conn)
        yield conn
