"""The operator's stop against a holder frozen INSIDE its fenced write
(issue 29, "a holder paused inside a transaction").

A real child (``crashcourse.lab.paused_stop``) is held at ``fenced:observe``
and SIGSTOPped there (T awaited); the operator's ``fence.cancel`` is issued
and seen waiting for the holder (SQLite: inside BEGIN IMMEDIATE; PostgreSQL:
its session's Lock wait, blocked by the holder's backend in
``pg_blocking_pids``). No sleep orders anything: the waits are bounded
joins, the barriers the kernel's and the server's rows.

* SQLite: the stop is blocked for exactly as long as the holder is frozen
  and commits only after the thaw; the control freezes the same holder
  before its transaction and the stop commits at once.
* PostgreSQL: the server ends the paused transaction after
  ``IDLE_IN_TRANSACTION_MS``; the stop commits within that bound while the
  holder is still frozen, and the thawed holder's write is refused by the
  fence. The control turns that timeout off in the holder's session: the
  stop is still blocked after three times the timeout, and commits only
  after the thaw, behind the holder's write.
"""

from __future__ import annotations

import pytest

from crashcourse.lab import paused_stop

try:  # the server's timeout; the SQLite cases run without psycopg too
    from crashcourse.store.postgres import IDLE_IN_TRANSACTION_MS
except ImportError:
    IDLE_IN_TRANSACTION_MS = 2000
IDLE_S = IDLE_IN_TRANSACTION_MS / 1000
HOLD_S = 3 * IDLE_S  # how long a stop is given while the holder stays frozen
# the bound stated for the stop on a server: the timeout, and what the
# server takes to notice it and the operator's lock wait to be woken
SLACK_S = 1.0


@pytest.mark.sqlite_only("SQLite's one write lock, held by a frozen process")
def test_on_sqlite_the_stop_waits_exactly_as_long_as_the_frozen_holder(store_at):
    seen = paused_stop.stop_against_a_paused_holder(store_at("stop"), hold_s=HOLD_S)
    assert seen["barrier"] == {"waits_in": "BEGIN IMMEDIATE"}, (
        "The stop should be seen waiting at BEGIN IMMEDIATE for the frozen holder.")
    assert not seen["stop_while_frozen"] and seen["status_before_thaw"] == "RUNNING", (
        "On SQLite nothing ends a frozen writer's transaction: the stop must not "
        "have committed while the holder was frozen.")
    assert seen["stop_waited_s"] >= HOLD_S, (
        "The stop should have waited at least as long as the holder was frozen.")
    assert 0 <= seen["stop_after_thaw_s"] < SLACK_S, (
        "The stop should commit only after the thaw, and soon after it.")
    assert seen["transcript"] == [1] and seen["holder_said"] == ["committed"], (
        "The holder's write (its lease still live) commits first, before the stop.")
    assert seen["work"]["status"] == "CANCELLED", "The stop lands once it can."


@pytest.mark.sqlite_only("the control of the SQLite case above")
def test_control_a_holder_frozen_outside_its_transaction_blocks_no_stop(store_at):
    seen = paused_stop.stop_against_a_paused_holder(
        store_at("stop"), hold_s=HOLD_S, frozen_at=paused_stop.OUTSIDE)
    assert seen["stop_while_frozen"] and seen["status_before_thaw"] == "CANCELLED", (
        "A holder frozen outside any transaction holds no lock: the stop commits.")
    assert seen["stop_waited_s"] < SLACK_S, "That stop should not wait for the pause."
    assert seen["refusals"] == [("observe", "superseded", 1)], (
        "The thawed holder's write should be refused by the fence.")


@pytest.mark.postgres_only("the server's idle_in_transaction_session_timeout")
def test_on_postgres_the_server_ends_the_paused_transaction_and_the_stop_lands(
        store_at):
    seen = paused_stop.stop_against_a_paused_holder(store_at("stop"), hold_s=HOLD_S)
    assert seen["holder_state_frozen"] == "idle in transaction", (
        "The frozen holder's session should be idle inside its transaction.")
    assert seen["barrier"]["blocked_by_holder"], (
        "The stop's session should wait on a lock the holder's backend holds.")
    assert seen["stop_while_frozen"] and seen["status_before_thaw"] == "CANCELLED", (
        "The stop should commit while the holder is still frozen.")
    assert seen["holder_session_after_hold"] is None, (
        "The server should have ended the holder's session.")
    assert IDLE_S - 0.05 <= seen["stop_after_idle_s"] <= IDLE_S + SLACK_S, (
        "The stop should commit once the server's timeout ends the holder's "
        f"transaction, within {IDLE_S} s + {SLACK_S} s of its idle start.")
    assert seen["holder_said"][-1] == "refused: superseded", (
        "The thawed holder, on a new connection, should be refused by the fence.")
    assert seen["refusals"] == [("observe", "superseded", 1)], (
        "The fence should have refused the generation-1 write.")
    assert seen["transcript"] == [], (
        "No row of the paused holder's generation should land.")


@pytest.mark.postgres_only("the control of the PostgreSQL case above")
def test_control_with_the_timeout_off_the_stop_waits_for_the_pause(store_at):
    seen = paused_stop.stop_against_a_paused_holder(
        store_at("stop"), hold_s=HOLD_S, idle_timeout=False)
    assert seen["barrier"]["blocked_by_holder"], (
        "The stop's session should wait on a lock the holder's backend holds.")
    assert not seen["stop_while_frozen"] and seen["status_before_thaw"] == "RUNNING", (
        "With the timeout off the stop must still be blocked after the hold.")
    assert seen["holder_session_after_hold"]["state"] == "idle in transaction", (
        "The server should have kept the frozen holder's transaction.")
    assert seen["stop_waited_s"] >= HOLD_S and seen["stop_after_thaw_s"] >= 0, (
        "The stop should wait out the whole pause and commit after the thaw.")
    assert seen["transcript"] == [1] and seen["holder_said"] == ["committed"], (
        "The thawed holder's write commits first, before the stop.")
