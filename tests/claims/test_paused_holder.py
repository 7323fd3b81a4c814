"""A holder paused INSIDE a fenced write transaction, past its lease (issue 29).

A real child process holds at the boundary ``fenced:<action>``, inside the
write transaction just after the fence's first check, and is frozen there
(SIGSTOP) until its 1 s lease is over by the clock. While it is frozen it
holds SQLite's one write lock: the replacement's claim and the operator's
cancel both get "database is locked" after their busy timeout (measured
here; a single-writer file cannot do better, chapter 10's server ends such
a transaction itself). Thawed, its write must NOT commit: the fence's second
check (``fence.lease_held_at_commit``) reads the clock again before the
COMMIT. The negative control runs the same child at the same boundary with
that check removed: its generation-1 row commits after its lease ended. The
evidence is the durable rows, read after the child exited.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import asdict
from pathlib import Path

import pytest

from crashcourse import claims, journal
from crashcourse.claims import fence
from crashcourse.journal.plan import save_plan
from crashcourse.lab.example import restock_plan
from crashcourse.lab.harness import Harness
from crashcourse.store import count_rows, opened, table_rows
from crashcourse.waiting import wait_until

CHILD = str(Path(__file__).with_name("paused_holder_child.py"))
LEASE_S = 1.0
BUSY_MS = 300  # the replacement's and the operator's wait for the lock
pytestmark = pytest.mark.sqlite_only("a real child holds the file's write lock")


def world(tmp_path, kind: str):
    """A store with one claimed piece of work: its path, the claim, and the
    table a late write would land in."""
    db = str(tmp_path / "store.db")
    with opened(db) as conn:
        if kind == "fence":
            fence.install(conn)
            claims.enqueue(conn, "phone:1", "s1", "restock")
            claim = claims.claim(conn, "holder", ttl=LEASE_S)
            return db, claim, "transcript"
        journal.install(conn)
        task = save_plan(conn, restock_plan())
        return db, journal.claim_task(conn, task, "holder", ttl=LEASE_S), "journal"


def paused_past_its_lease(tmp_path, kind: str, mode: str) -> dict:
    """Run the child to ``fenced:<action>``, freeze it there, wait its lease
    out, try the replacement's claim and the operator's cancel, thaw it;
    what happened, and the rows it left."""
    db, claim, table = world(tmp_path, kind)
    action = "observe" if kind == "fence" else "intent"
    seen: dict = {}
    with Harness() as harness:
        child = harness.start([CHILD, db, json.dumps(asdict(claim)), kind, mode],
                              stop_at=f"fenced:{action}")
        child.wait_for_boundary()
        child.freeze()  # SIGSTOP inside the transaction, holding the lock
        child.release()  # read once it runs again
        wait_until(lambda: time.time() > claim.expires + 0.05, 10,
                   interval=0.02, what="the holder's lease to run out")
        with opened(db, busy_timeout_ms=BUSY_MS) as other:
            # a WAL reader: the frozen writer does not block it
            assert count_rows(other, table) == 0  # nothing committed while frozen
            for name, attempt in (
                    ("claim", lambda: claims.claim(
                        other, "replacement", ttl=60, role=claim.role,
                        work_id=claim.id)),
                    ("cancel", lambda: fence.cancel(other, claim.id))):
                began = time.monotonic()
                with pytest.raises(sqlite3.OperationalError, match="locked"):
                    attempt()
                seen[name] = time.monotonic() - began
        thawed_at = time.time()
        child.thaw()
        done = child.finish()
    with opened(db) as conn:
        seen.update(returncode=done.returncode, out=done.stdout.strip(),
                    late=table_rows(conn, table,
                                    "seq" if table == "transcript" else "step"),
                    refusals=[r["reason"] for r in table_rows(conn, "refusals",
                                                              "seq")],
                    thawed_after_lease=thawed_at - claim.expires)
        seen["taken"] = claims.claim(conn, "replacement", ttl=60, role=claim.role,
                                     work_id=claim.id)
    return seen


@pytest.mark.parametrize("kind", ["fence", "journal"])
def test_a_holder_paused_inside_its_write_past_its_lease_commits_nothing(
        tmp_path, kind):
    """Bug: the fence checks the lease only when the transaction begins: a
    holder frozen inside it commits its generation-1 row when thawed, after
    its lease ended (issue 29, review 05-08 finding 1)."""
    seen = paused_past_its_lease(tmp_path, kind, "new")
    # what a single writer means: both waited their busy timeout, then failed
    assert seen["claim"] >= BUSY_MS / 1000 and seen["cancel"] >= BUSY_MS / 1000
    assert seen["thawed_after_lease"] > 0
    assert seen["returncode"] == 5 and seen["out"] == "lease expired at commit"
    assert seen["late"] == []  # the durable evidence: no row of generation 1
    assert seen["refusals"] == ["lease expired at commit"]
    assert seen["taken"].generation == 2  # the takeover lands once it is thawed


@pytest.mark.parametrize("kind", ["fence", "journal"])
def test_negative_control_without_the_commit_check_the_late_row_lands(
        tmp_path, kind):
    """The same child at the same boundary with ``lease_held_at_commit``
    removed: its row commits after its lease ended. So the test above can
    fail, and the pause does land inside the transaction."""
    seen = paused_past_its_lease(tmp_path, kind, "old")
    assert seen["returncode"] == 0 and seen["out"] == "committed"
    assert [row["generation"] for row in seen["late"]] == [1]
    assert seen["thawed_after_lease"] > 0 and seen["refusals"] == []


def test_a_lapsed_lease_is_not_renewed(tmp_path):
    """Bug: ``renew_locked`` extends whatever lease it finds, so a holder
    thawed after its lease gives itself a fresh one from the thaw."""
    db, claim, _ = world(tmp_path, "fence")
    with opened(db) as conn:
        with pytest.raises(fence.StaleClaim, match="lease expired"):
            with fence.immediate(conn):
                fence.renew_locked(conn, claim, 60, now=claim.expires + 1)
        assert claims.work_row(conn, claim.id)["expires"] == claim.expires
        with fence.immediate(conn):  # the control: a live lease is renewed
            assert fence.renew_locked(conn, claim, 60, now=claim.expires - 0.5) == (
                claim.expires - 0.5 + 60)
