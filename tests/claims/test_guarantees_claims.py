"""The scheduler switch and the order claims are granted in (chapters 05, 09):
each test defends one guarantee against the one-line bug named in its
docstring."""

from __future__ import annotations

import pytest

from crashcourse import claims, control
from crashcourse.claims import fence
from crashcourse.store import immediate, opened

T0 = 1_000_000.0


# ``conn`` (tests/conftest.py): a fresh store on each backend, with these:
pytestmark = pytest.mark.installs.with_args(fence.install)


def test_an_installed_switch_with_no_row_says_stopped(conn):
    """Bug: with no decision recorded, ``scheduler_may_run`` says run."""
    control.install(conn)
    assert control.scheduler_may_run(conn) is False
    assert control.start_run(conn, "s1") is None
    control.start_scheduler(conn, "sam")
    assert control.scheduler_may_run(conn) is True


def test_control_work_comes_first_also_behind_a_turn_the_pass_refuses(conn):
    """Bug: the walk merges a session's later turns after ordinary work.

    Session ``ops`` opens with a control turn of another role (this pass
    refuses it); its second turn is control work of this role. Five older
    ordinary turns wait in other sessions. Control work still comes first."""
    for n in range(5):
        claims.enqueue(conn, f"phone:{n}", f"s{n}", f"restock {n}")
    claims.enqueue(conn, "ops:audit", "ops", "audit", role="auditor", control=True)
    urgent = claims.enqueue(conn, "ops:stop", "ops", "stop", control=True)
    claim = claims.claim(conn, "w", ttl=5, now=T0)
    assert claim.id == urgent


def control_pass_cost(path, ordinary_turns: int) -> int:
    """SQLite VM instructions of one control-only claim that finds nothing."""
    with opened(path) as conn:
        fence.install(conn)
        with immediate(conn):
            conn.executemany(
                "INSERT INTO work (id, origin, session, prompt, subject, role,"
                " created) VALUES (:id, :id, :id, 'restock', '', 'shop', :created)",
                [{"id": f"w{n:05d}", "created": float(n)}
                 for n in range(ordinary_turns)])
        steps = [0]

        def count() -> int:
            steps[0] += 1
            return 0

        conn.set_progress_handler(count, 1)
        try:
            assert claims.claim(conn, "ops", ttl=5, now=T0, control_only=True) is None
        finally:
            conn.set_progress_handler(None, 1)
    return steps[0]


def test_a_control_only_pass_stops_at_the_first_ordinary_turn(tmp_path):
    """Bug: the walk goes on past ordinary work when only control work may be
    taken, reading every queued turn (the claim costs O(queue)). SQLite
    alone: the walk is SQLite's, and its VM instructions are the measure."""
    few = control_pass_cost(tmp_path / "few.db", 20)
    many = control_pass_cost(tmp_path / "many.db", 3000)
    assert many <= 1.25 * few, (few, many)
