"""Grades exercise 11.2: the chosen modes under a power cut at every point of
the pay-then-checkpoint run, resumed, and what they cost in fsyncs."""

import pytest

from crashcourse.powerloss import Mode
from crashcourse.powerloss_images import SUBSETS, SYNCED
from crashcourse.powerloss_runs import WORKER, pay_then_checkpoint_case
from crashcourse.powerloss_vfs import SYNC

SERVICE = "payments.sqlite"
MUST_BE_NONE = ("acknowledged_lost", "corrupt", "double_charges",
                "unpaid_after_resume")


def modes_of(answer) -> dict:
    one_fsync = answer("ch11", "one_fsync")
    return one_fsync.choose_modes({SERVICE: one_fsync.RECORD,
                                   WORKER: one_fsync.PROGRESS})


@pytest.mark.parametrize("model", [SYNCED, SUBSETS])
def test_no_payment_lost_corrupt_or_charged_twice(answer, tmp_path, model):
    modes = modes_of(answer)
    found = pay_then_checkpoint_case(tmp_path, modes[SERVICE], modes[WORKER], 2,
                                     model=model, budget=6)
    assert {name: found[name] for name in MUST_BE_NONE} == dict.fromkeys(
        MUST_BE_NONE, 0)


def syncs_in_run(tmp_path, service: Mode, worker: Mode) -> int:
    found = pay_then_checkpoint_case(tmp_path, service, worker, 3)
    return found["disk_calls"].get(SYNC, 0)


def test_the_worker_s_checkpoint_pays_no_fsync_per_commit(answer, tmp_path):
    """Fewer fsyncs in the whole run than with the worker's file in FULL."""
    modes = modes_of(answer)
    chosen = syncs_in_run(tmp_path / "chosen", modes[SERVICE], modes[WORKER])
    full = syncs_in_run(tmp_path / "full", modes[SERVICE], Mode("WAL", "FULL"))
    assert chosen < full


def test_the_choice_follows_the_role_not_the_name(answer):
    one_fsync = answer("ch11", "one_fsync")
    given = modes_of(answer)
    other = one_fsync.choose_modes({"ledger.sqlite": one_fsync.RECORD,
                                    "cursor.sqlite": one_fsync.PROGRESS,
                                    "notes.sqlite": one_fsync.PROGRESS})
    assert other == {"ledger.sqlite": given[SERVICE], "cursor.sqlite": given[WORKER],
                     "notes.sqlite": given[WORKER]}
