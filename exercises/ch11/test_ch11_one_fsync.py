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
    counts = {name: found[name] for name in MUST_BE_NONE}
    assert counts == dict.fromkeys(MUST_BE_NONE, 0), (
        f"with the modes chosen ({modes[SERVICE]} for the record, {modes[WORKER]}"
        f" for the progress) a power loss left {counts}: the system of record"
        " must survive every crash image")


def syncs_in_run(tmp_path, service: Mode, worker: Mode) -> int:
    found = pay_then_checkpoint_case(tmp_path, service, worker, 3)
    return found["disk_calls"].get(SYNC, 0)


def test_the_worker_s_checkpoint_pays_no_fsync_per_commit(answer, tmp_path):
    """Fewer fsyncs in the whole run than with the worker's file in FULL."""
    modes = modes_of(answer)
    chosen = syncs_in_run(tmp_path / "chosen", modes[SERVICE], modes[WORKER])
    full = syncs_in_run(tmp_path / "full", modes[SERVICE], FULL)
    assert chosen < full, (
        f"the worker's file in {modes[WORKER]} cost {chosen} fsyncs, not fewer"
        f" than the {full} of WAL+FULL: progress that can be re-derived need not"
        " be synced on every commit")


@pytest.mark.parametrize("model", [SYNCED_ONLY, UNSYNCED_SUBSETS])
def test_a_journal_whose_probes_see_repeats_nothing(answer, tmp_path, model):
    found = journal_case(tmp_path, modes_of(answer)[JOURNAL_FILE], model=model,
                         budget=6)
    counts = (found["double_charges"], found["corrupt"], found["unfinished"])
    assert counts == (0, 0, 0), (
        "a journal whose probes see was left with (double charges, corrupt,"
        f" unfinished) = {counts} by a power loss: its mode loses what it needs")


def test_a_journal_whose_probes_see_pays_no_fsync_per_commit(answer, tmp_path):
    chosen = journal_case(tmp_path / "chosen", modes_of(answer)[JOURNAL_FILE])
    full = journal_case(tmp_path / "full", FULL)
    paid, at_full = chosen["disk_calls"].get(SYNC, 0), full["disk_calls"].get(SYNC, 0)
    assert paid < at_full, (
        f"the journal whose probes see cost {paid} fsyncs, not fewer than the"
        f" {at_full} of WAL+FULL: its probes repair what a lost commit forgets")


@pytest.mark.parametrize("model", [SYNCED_ONLY, UNSYNCED_SUBSETS])
def test_a_blind_journal_repeats_only_the_step_it_held_in_doubt(answer, tmp_path,
                                                                model):
    """A repeat is allowed only where the image held the step in doubt (an
    intent without an outcome): a SIGKILL there repeats it too."""
    found = journal_case(tmp_path, modes_of(answer)[BLIND_FILE], model=model,
                         budget=6, actions=blind_mail_actions)
    counts = (found["twice_without_doubt"], found["corrupt"], found["unfinished"])
    assert counts == (0, 0, 0), (
        "the blind journal was left with (repeats without doubt, corrupt,"
        f" unfinished) = {counts}: a journal that cannot probe must keep every"
        " commit")


def test_the_choice_follows_the_role_not_the_name(answer):
    one_fsync = answer("ch11", "one_fsync")
    given = modes_of(answer)
    other = one_fsync.choose_modes({"ledger.sqlite": one_fsync.RECORD,
                                    "cursor.sqlite": one_fsync.PROGRESS,
                                    "notes.sqlite": one_fsync.PROGRESS,
                                    "steps.sqlite": one_fsync.BLIND_JOURNAL,
                                    "plan.sqlite": one_fsync.JOURNAL})
    wanted = {"ledger.sqlite": given[SERVICE], "cursor.sqlite": given[WORKER],
              "notes.sqlite": given[WORKER], "steps.sqlite": given[BLIND_FILE],
              "plan.sqlite": given[JOURNAL_FILE]}
    assert other == wanted, (
        f"files of the same roles under other names got {other}, not {wanted}:"
        " choose_modes must decide by role, not by the file's name")


def test_the_files_that_must_survive_pay_no_more_than_wal_full(answer, tmp_path):
    """The other two roles' cost: WAL+FULL loses nothing for the system of
    record nor for the blind journal (the tests above), so a choice for them
    may not pay more fsyncs than WAL+FULL does (DELETE+EXTRA would)."""
    modes = modes_of(answer)
    chosen = syncs_in_run(tmp_path / "chosen", modes[SERVICE], modes[WORKER])
    full = syncs_in_run(tmp_path / "full", FULL, modes[WORKER])
    assert chosen <= full, (
        f"the system of record in {modes[SERVICE]} cost {chosen} fsyncs, more"
        f" than the {full} of WAL+FULL, which already loses nothing")
    blind = journal_case(tmp_path / "blind", modes[BLIND_FILE],
                         actions=blind_mail_actions)
    blind_full = journal_case(tmp_path / "blind-full", FULL,
                              actions=blind_mail_actions)
    paid, at_full = (blind["disk_calls"].get(SYNC, 0),
                     blind_full["disk_calls"].get(SYNC, 0))
    assert paid <= at_full, (
        f"the blind journal in {modes[BLIND_FILE]} cost {paid} fsyncs, more than"
        f" the {at_full} of WAL+FULL, which already loses nothing")
