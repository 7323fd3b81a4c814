"""A stored plan is rows, one per step, read from the resume point (issue 11).

``save_plan`` writes a head row and one row per step; ``load_plan`` reads the
head alone and ``plan.steps[k:]`` reads only the rows after step k. What a
read costs is counted in SQLite's own virtual-machine instructions (its
progress handler), never timed: a load that read every row would cost about a
thousand times more for 10,000 steps than for 10. What a plan is, stored
and loaded, is checked on both backends (``store_at``, chapter 10); its cost,
its slices and a closed connection, on SQLite.
"""

from __future__ import annotations

import sqlite3

import pytest

from crashcourse import store
from crashcourse.journal.plan import (
    OldPlanStore,
    PlanChanged,
    Step,
    StoredSteps,
    UnknownTask,
    load_plan,
    make_plan,
    order_plan,
    save_plan,
)
from crashcourse.store import opened
from crashcourse.store.dialect import SQLITE

OLD_SCHEMA = "CREATE TABLE plans (task TEXT PRIMARY KEY, body TEXT NOT NULL)"


def mixed_plan(renames: int = 6):
    """Renames, a gate and two mails, with arguments JSON must carry whole."""
    steps = [Step(0, "rename", {"file_id": f"f{i:03}", "name": f"facture-{i}-é.pdf",
                                "tags": ["a", {"b": None}], "size": i * 1.5})
             for i in range(1, renames + 1)]
    steps += [Step(0, "send_mail", {"to": "owner@shop.example"}, irreversible=True),
              Step(0, "verify_drive", {"expect": renames}, gate=True),
              Step(0, "send_mail", {"to": "books@shop.example"}, irreversible=True)]
    return order_plan("mixed", steps)


def tables(conn) -> list[str]:
    """The tables the store holds, by name."""
    if store.dialect(conn) is SQLITE:
        return [row[0] for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")]
    return [row[0] for row in conn.execute(
        "SELECT table_name FROM information_schema.tables"
        " WHERE table_schema = current_schema()")]


def touch_plan(n: int, name: str = "long"):
    return make_plan(name, [Step(i, "touch", {"i": i}) for i in range(1, n + 1)])


def vm_steps(conn: sqlite3.Connection, work) -> tuple[int, list[str]]:
    """SQLite instructions ``work()`` made ``conn`` run, and its statements."""
    counted, statements = [0], []

    def tick() -> int:
        counted[0] += 1
        return 0  # 0: go on (non-zero would interrupt the statement)

    conn.set_progress_handler(tick, 1)
    conn.set_trace_callback(statements.append)
    try:
        work()
    finally:
        conn.set_progress_handler(None, 1)
        conn.set_trace_callback(None)
    return counted[0], statements


def test_a_saved_plan_loads_equal_with_the_same_task_and_body(store_at):
    plan = mixed_plan()
    with opened(store_at("j")) as conn:
        task = save_plan(conn, plan)
        loaded = load_plan(conn, task)
        assert isinstance(loaded.steps, StoredSteps)
        assert loaded == plan and plan == loaded
        assert (loaded.task, loaded.body()) == (task, plan.body())
        assert len(loaded.steps) == len(plan.steps) == 9
        assert list(loaded.steps) == list(plan.steps)
        assert loaded.steps[-1] == plan.steps[-1] and loaded.steps[3] == plan.steps[3]
        with pytest.raises(IndexError):
            loaded.steps[9]
        rows = conn.execute("SELECT count(*) FROM plan_steps WHERE task = :task",
                            {"task": task}).fetchone()[0]
    assert rows == 9  # one row per step


def test_every_lazy_slice_equals_the_eager_one(tmp_path):
    """Python's slicing over one range query (the same SQL on any backend)."""
    plan = mixed_plan()
    n = len(plan.steps)
    with opened(tmp_path / "j.sqlite") as conn:
        loaded = load_plan(conn, save_plan(conn, plan))
        bounds = [None, *range(-n - 2, n + 3)]
        for start in bounds:
            for stop in bounds:
                for stride in (None, 1, 2, -1, -3):
                    cut = slice(start, stop, stride)
                    assert loaded.steps[cut] == plan.steps[cut], cut
        skipped = 4  # exactly what run_plan asks of a plan it resumes
        assert ({s.action for s in loaded.steps[skipped:]}
                == {s.action for s in plan.steps[skipped:]})


def test_an_empty_plan_round_trips(store_at):
    plan = make_plan("empty", [])
    with opened(store_at("j")) as conn:
        loaded = load_plan(conn, save_plan(conn, plan))
        assert loaded == plan and len(loaded.steps) == 0 and loaded.steps[0:] == ()


def test_the_same_plan_saved_twice_is_one_task_and_other_steps_are_refused(store_at):
    plan = mixed_plan()
    with opened(store_at("j")) as conn:
        task = save_plan(conn, plan)
        assert save_plan(conn, mixed_plan()) == task
        assert save_plan(conn, mixed_plan(renames=5)) != task  # changed: new task
        assert conn.execute("SELECT count(*) FROM plans").fetchone()[0] == 2
        conn.execute("UPDATE plan_steps SET step = :step WHERE task = :task"
                     " AND number = 2", {"step": '{"x": 1}', "task": task})
        with pytest.raises(PlanChanged):
            save_plan(conn, plan)


def test_a_head_that_promises_another_length_is_refused(store_at):
    plan = mixed_plan()
    with opened(store_at("j")) as conn:
        task = save_plan(conn, plan)
        conn.execute("UPDATE plans SET steps = steps + 1 WHERE task = :task",
                     {"task": task})
        with pytest.raises(PlanChanged):
            save_plan(conn, plan)
        with pytest.raises(ValueError, match="not all stored"):
            load_plan(conn, task).steps[-1]


def test_an_unknown_task_and_a_fresh_file_raise_unknown_task(store_at):
    with opened(store_at("j")) as conn:
        with pytest.raises(UnknownTask):
            load_plan(conn, "mixed-000000000000")
        assert tables(conn) == []
        save_plan(conn, mixed_plan())
        with pytest.raises(UnknownTask):
            load_plan(conn, "mixed-000000000000")


def test_a_store_of_the_old_body_format_loads_and_refuses_new_plans(store_at):
    plan = mixed_plan()
    with opened(store_at("old")) as conn:
        conn.execute(OLD_SCHEMA)  # as plan.py wrote it before issue 11
        conn.execute("INSERT INTO plans (task, body) VALUES (:task, :body)",
                     {"task": plan.task, "body": plan.body()})
        loaded = load_plan(conn, plan.task)
        assert loaded == plan and loaded.task == plan.task
        with pytest.raises(OldPlanStore, match="one JSON body"):
            save_plan(conn, touch_plan(3))
        assert tables(conn) == ["plans"]  # nothing written beside the old table
        with pytest.raises(UnknownTask):
            load_plan(conn, touch_plan(3).task)


def test_steps_read_after_their_connection_closed_say_so(tmp_path):
    with opened(tmp_path / "j.sqlite") as conn:
        loaded = load_plan(conn, save_plan(conn, mixed_plan()))
        assert len(loaded.steps) == 9
    assert len(loaded.steps) == 9  # the head was read at load
    with pytest.raises(sqlite3.ProgrammingError, match="connection load_plan"):
        loaded.steps[8:]


def test_loading_and_resuming_read_only_the_rows_from_the_resume_point(tmp_path):
    """load_plan, len and run_plan's two slices near the end cost the same
    SQLite work for 10,000 steps as for 10: no statement walks every row."""
    cost = {}
    with opened(tmp_path / "j.sqlite") as conn:
        for n in (10, 10_000):
            task = save_plan(conn, touch_plan(n, f"plan{n}"))
            seen = {}

            def resume(n=n, task=task, seen=seen):
                plan = load_plan(conn, task)
                skipped = n - 2  # killed in step n - 1: two steps left
                seen["length"] = len(plan.steps)
                seen["actions"] = {s.action for s in plan.steps[skipped:]}
                seen["left"] = [s.number for s in plan.steps[skipped:]]

            cost[n] = vm_steps(conn, resume)
            assert seen == {"length": n, "actions": {"touch"}, "left": [n - 1, n]}
    (short, statements), (long, _) = cost[10], cost[10_000]
    assert long <= short * 1.5 + 50, (short, long, statements)
