"""Grades exercise 11.2: the chosen modes under a power cut at every point of
the pay-then-checkpoint run and of the journal's run (with every probe, and
with a blind mail probe), each image resumed; and what the choice costs in
fsyncs."""

import pytest

from crashcourse.powerloss import Mode
from crashcourse.powerloss.images import SYNCED_ONLY, UNSYNCED_SUBSETS
from crashcourse.powerloss.journal import blind_mail_actions, journal_case
from crashcourse.powerloss.runs import WORKER, pay_then_checkpoint_case
from crashcourse.powerloss.vfs import SYNC

SERVICE, JOURNAL_FILE, BLIND_FILE = "payments.sqlite", "journal.sqlite", "blind.sqlite"
MUST_BE_NONE = ("acknowledged_lost", "corrupt", "double_charges",
                "unpaid_after_resume")
FULL = Mode("WAL", "FULL")


def modes_of(answer) -> dict:
    one_fsync = answer("ch11", "one_fsync")
    return one_fsync.choose_modes({SERVICE: one_fsync.RECORD,
                                   WORKER: one_fsync.PROGRESS,
                                   JOURNAL_FILE: one_fsync.JOURNAL,
                                   BLIND_FILE: one_fsync.BLIND_JOURNAL})


@pytest.mark.parametrize("model", [SYNCED_ONLY, UNSYNCED_SUBSETS])
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
    full = syncs_in_run(tmp_path / "full", modes[SERVICE], FULL)
    assert chosen < full


@pytest.mark.parametrize("model", [SYNCED_ONLY, UNSYNCED_SUBSETS])
def test_a_journal_whose_probes_see_repeats_nothing(answer, tmp_path, model):
    found = journal_case(tmp_path, modes_of(answer)[JOURNAL_FILE], model=model,
                         budget=6)
    assert (found["double_charges"], found["corrupt"], found["unfinished"]) == (
        0, 0, 0)


def test_a_journal_whose_probes_see_pays_no_fsync_per_commit(answer, tmp_path):
    chosen = journal_case(tmp_path / "chosen", modes_of(answer)[JOURNAL_FILE])
    full = journal_case(tmp_path / "full", FULL)
    assert chosen["disk_calls"].get(SYNC, 0) < full["disk_calls"].get(SYNC, 0)


@pytest.mark.parametrize("model", [SYNCED_ONLY, UNSYNCED_SUBSETS])
def test_a_blind_journal_repeats_only_the_step_it_held_in_doubt(answer, tmp_path,
                                                                model):
    """A repeat is allowed only where the image held the step in doubt (an
    intent without an outcome): a SIGKILL there repeats it too."""
    found = journal_case(tmp_path, modes_of(answer)[BLIND_FILE], model=model,
                         budget=6, actions=blind_mail_actions)
    assert (found["twice_without_doubt"], found["corrupt"], found["unfinished"]) \
        == (0, 0, 0)


def test_the_choice_follows_the_role_not_the_name(answer):
    one_fsync = answer("ch11", "one_fsync")
    given = modes_of(answer)
    other = one_fsync.choose_modes({"ledger.sqlite": one_fsync.RECORD,
                                    "cursor.sqlite": one_fsync.PROGRESS,
                                    "notes.sqlite": one_fsync.PROGRESS,
                                    "steps.sqlite": one_fsync.BLIND_JOURNAL,
                                    "plan.sqlite": one_fsync.JOURNAL})
    assert other == {"ledger.sqlite": given[SERVICE], "cursor.sqlite": given[WORKER],
                     "notes.sqlite": given[WORKER], "steps.sqlite": given[BLIND_FILE],
                     "plan.sqlite": given[JOURNAL_FILE]}


def test_the_files_that_must_survive_pay_no_more_than_wal_full(answer, tmp_path):
    """The other two roles' cost: WAL+FULL loses nothing for the system of
    record nor for the blind journal (the tests above), so a choice for them
    may not pay more fsyncs than WAL+FULL does (DELETE+EXTRA would)."""
    modes = modes_of(answer)
    chosen = syncs_in_run(tmp_path / "chosen", modes[SERVICE], modes[WORKER])
    full = syncs_in_run(tmp_path / "full", FULL, modes[WORKER])
    assert chosen <= full
    blind = journal_case(tmp_path / "blind", modes[BLIND_FILE],
                         actions=blind_mail_actions)
    blind_full = journal_case(tmp_path / "blind-full", FULL,
                              actions=blind_mail_actions)
    assert blind["disk_calls"].get(SYNC, 0) <= blind_full["disk_calls"].get(SYNC, 0)
