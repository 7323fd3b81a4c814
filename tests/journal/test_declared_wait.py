"""Every write an action of chapter 07 makes keeps to the wait it declared.

The journal admits a step only if the action's declared wait (``wait_s``)
fits in what is left of the lease; a call that then waits the service's
default busy timeout (5 s) for a lock another writer holds would outlive
the lease it was admitted under (issue 29, review ch05-08 #3). Here another
connection holds the service's write lock (or a guarded service's broker's)
for the whole call: each write gives up after about its declared wait with
nothing written, never after the default. The control shows the bound
bites: the same service call with no declaration waits the full default.
"""

from __future__ import annotations

import sqlite3
import time

import pytest

from crashcourse.services import broker, drive, mail
from crashcourse.store import (
    DEFAULT_BUSY_TIMEOUT_MS,
    connect,
    count_rows,
    immediate,
    opened,
)
from crashcourse.workers.journal_worker import restock_actions

DECLARED_S = 0.2
# Far above the declared wait and far below the default, so that neither a
# slow wake-up on a loaded machine nor a missing declaration is mistaken for
# the other.
BOUND_S = DEFAULT_BUSY_TIMEOUT_MS / 1000 / 2
ARGS = {"file_id": "f001", "name": "invoice-001.pdf"}
MAIL = {"to": "owner@example.com", "subject": "s", "body": "b"}


def world(tmp_path, guarded: bool) -> dict:
    where = {"drive": str(tmp_path / "drive.sqlite"),
             "mail": str(tmp_path / "mail.sqlite"),
             "broker": str(tmp_path / "broker.sqlite")}
    token = None
    if guarded:
        broker.install(where["broker"])
        token = broker.issue(where["broker"], "worker", "drive:rename mail:submit", 60)
    drive.install(where["drive"], {"f001": "scan-001.pdf"},
                  broker=where["broker"] if guarded else None)
    mail.install(where["mail"], broker=where["broker"] if guarded else None)
    where["actions"] = restock_actions(where["drive"], where["mail"],
                                       credential=token, wait_s=DECLARED_S)
    return where


def writes(where: dict) -> dict:
    """The durable effects: rename requests and accepted messages."""
    with opened(where["drive"]) as d, opened(where["mail"]) as m:
        return {"renames": count_rows(d, "rename_requests"),
                "messages": count_rows(m, "messages")}


CALLS = {
    "rename": lambda a: a["rename"].execute(ARGS, "task/1/rename/k"),
    "rename_back": lambda a: a["rename"].restore(ARGS, {"name": "scan-001.pdf"},
                                                "task/1/rename/undo"),
    "send_mail": lambda a: a["send_mail"].execute(MAIL, "task/42/send_mail/k"),
}
LOCKED = {"rename": "drive", "rename_back": "drive", "send_mail": "mail"}


@pytest.mark.parametrize("guarded, held", [(False, "service"), (True, "service"),
                                           (True, "broker")])
@pytest.mark.parametrize("call", sorted(CALLS))
def test_a_write_gives_up_after_its_declared_wait_with_nothing_written(
        tmp_path, call, guarded, held):
    where = world(tmp_path, guarded)
    before = writes(where)
    holder = connect(where[LOCKED[call] if held == "service" else "broker"])
    try:
        with immediate(holder):  # another writer holds the lock throughout
            started = time.monotonic()
            with pytest.raises(sqlite3.OperationalError, match="locked"):
                CALLS[call](where["actions"])
            waited = time.monotonic() - started
    finally:
        holder.close()
    assert DECLARED_S * 0.9 <= waited < BOUND_S, waited
    assert writes(where) == before


def test_control_the_same_call_with_no_declaration_waits_the_default(tmp_path):
    """Negative control: the bound above is not met by any call whatever."""
    where = world(tmp_path, guarded=False)
    holder = connect(where["mail"])
    try:
        with immediate(holder):
            started = time.monotonic()
            with pytest.raises(sqlite3.OperationalError, match="locked"):
                mail.submit(where["mail"], MAIL["to"], MAIL["subject"], MAIL["body"],
                            {mail.KEY_HEADER: "k"})
            waited = time.monotonic() - started
    finally:
        holder.close()
    assert waited >= BOUND_S, waited
