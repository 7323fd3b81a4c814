"""Grades exercise 11.3: the first breaking point, derived again from the
run's own events, and none where the ordering is right."""

from crashcourse.powerloss import Mode
from crashcourse.powerloss.runs import CHECKPOINTED, WORKER, pay_then_checkpoint_run
from crashcourse.powerloss.vfs import MARK, SYNC

FULL, NORMAL = Mode("WAL", "FULL"), Mode("WAL", "NORMAL")


def checkpoint_made_durable(recorder) -> int:
    """The crash point just after the fsync that put the first checkpoint on
    disk: the last sync of the worker's WAL before the worker went on."""
    events = recorder.events
    noted = next(i for i, e in enumerate(events)
                 if e.kind == MARK and e.name == CHECKPOINTED)
    return max(i for i, e in enumerate(events[:noted])
               if e.kind == SYNC and e.name == f"{WORKER}-wal") + 1


def test_the_wrong_ordering_breaks_where_the_checkpoint_reaches_the_disk(
        answer, tmp_path):
    recorder = pay_then_checkpoint_run(tmp_path, NORMAL, FULL, 2)
    found = answer("ch11", "breaking_point").first_break(recorder, 2)
    expected = checkpoint_made_durable(recorder)
    assert found == expected, (
        f"the first break was put at crash point {found}, not {expected}: the"
        " ordering breaks just after the fsync that puts the first checkpoint"
        " on disk (the worker's last WAL sync before it went on)")


def test_with_three_tasks_too(answer, tmp_path):
    recorder = pay_then_checkpoint_run(tmp_path, NORMAL, FULL, 3)
    found = answer("ch11", "breaking_point").first_break(recorder, 3)
    expected = checkpoint_made_durable(recorder)
    assert found == expected, (
        f"with three tasks the first break was put at crash point {found}, not"
        f" {expected}: it must be derived from the run's events, not counted"
        " for two tasks")


def test_the_right_ordering_never_breaks(answer, tmp_path):
    recorder = pay_then_checkpoint_run(tmp_path, FULL, NORMAL, 2)
    found = answer("ch11", "breaking_point").first_break(recorder, 2)
    assert found is None, (
        f"a break was found at crash point {found} where the service's record"
        " is durable before the checkpoint: the right ordering never breaks")
