"""Chapter 11 checkpoint: what a power cut leaves, at every point of a run.

    python checkpoints/ch11_power_loss.py --output PATH [--quick] [--seed N]

Each run is the book's own code (the payment service, the paying worker, the
chapter 07 journal) with SQLite's file operations recorded by a VFS
(``crashcourse.powerloss``, which needs ``apsw``). At EVERY event of the run
(a write, a sync, a truncation, a file made or removed, a directory sync)
the disk is rebuilt as a power cut there could leave it, under two models:
``synced_only`` (only writes a later fsync of their file covered survive) and
``unsynced_subsets`` (the writes since each file's last fsync survive in any
subset of 512-byte sectors: every subset when there are few, else a seeded
sample of ``budget`` images: "none", "all", in-order prefixes and random
subsets; each trial says at how many points it sampled). Each image is
opened with the standard ``sqlite3``, checked with ``PRAGMA integrity_check``
and read, and opened once more, on a copy, by the runtime's own
``store.opened`` (``refused``: ``StoreDamaged`` or ``StoreMissing``).

A file's mode is FORCED (the question is what each level does), except in
``as_shipped``, where each file is opened at the level the runtime asks for:
the services FULL (``record=True``), the worker's file NORMAL.

Cases:

- ``service``: the payment service, a second idle connection held open as a
  server's would be, making N payments in WAL+FULL, WAL+NORMAL, DELETE+FULL,
  DELETE+EXTRA and WAL+OFF. A payment is acknowledged once ``issue_payment``
  returned before the crash point; ``acknowledged_lost`` counts the images
  missing one, ``corrupt`` the images that fail the check.
- ``service_per_call``: WAL+NORMAL with no connection held open: the last
  connection to close checkpoints, and that checkpoint syncs.
- ``as_shipped``: the service, and the pay-then-checkpoint run, at the
  levels the runtime's code asks for.
- ``pay_then_checkpoint``: the worker pays, then checkpoints in its own
  file; every image is resumed (tasks without a checkpoint pay again under
  their derived key) and the payments counted: ``double_charges``, and
  ``unpaid_after_resume`` (the worker holds the task done, the payment is
  gone).
- ``journal``: a small plan (two renames, the gate, one mail) through the
  journal; every image is resumed with ``run_plan``. ``acknowledged_lost``
  counts images missing an intent or outcome the journal had committed
  before the crash point; ``no_intent_for_done`` the images where a step's
  target shows it done and the journal has no intent for it (the probe
  decides); ``double_charges`` the steps performed twice after the resume,
  ``twice_without_doubt`` the images where a step ran twice that the
  journal, as the cut left it, did not hold in doubt.
- ``journal_blind``: the journal in NORMAL resumed with a mail probe that
  never finds the mail (``powerloss.journal.blind_mail_actions``): the
  negative control, where the lost intent lets the mail go twice.

What must hold (``EXPECTED``): WAL+FULL and DELETE+EXTRA lose no
acknowledged payment and no image is corrupt; WAL+NORMAL and DELETE+FULL
are SHOWN losing acknowledged payments, never corrupt; WAL+OFF loses them;
the runtime as shipped loses nothing and charges nothing twice; the service
in FULL with the worker in NORMAL charges nothing twice and loses nothing
acknowledged; the service in NORMAL shows the payment that vanished; the
journal in NORMAL loses committed intents of steps already done, in FULL
none, and with its probes nothing is performed twice; with a blind probe
something is. In every trial the runtime refuses no sound image and trusts
no damaged one.
``cost`` (beside the trials) is the price: microseconds per payment commit,
FULL against NORMAL, interleaved rounds on this machine's disk, medians.
Exit 0 only when every trial holds; 2 for bad usage or an existing --output.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import apsw

from crashcourse.lab import experiment
from crashcourse.lab.harness import Moments
from crashcourse.powerloss import AS_OPENED, Mode, service_case
from crashcourse.powerloss.images import SCRATCH, SYNCED_ONLY, UNSYNCED_SUBSETS
from crashcourse.powerloss.journal import blind_mail_actions, journal_case
from crashcourse.powerloss.runs import commit_cost, pay_then_checkpoint_case

EVIDENCE_ID = "crashcourse.ch11.power_loss/2"
FULL, NORMAL = Mode("WAL", "FULL"), Mode("WAL", "NORMAL")
AS_SHIPPED = Mode("WAL", AS_OPENED)
SERVICE_MODES = (FULL, NORMAL, Mode("DELETE", "FULL"), Mode("DELETE", "EXTRA"),
                 Mode("WAL", "OFF"))
NONE, SOME, ANY = "none", "some", "any"  # what a count must be
SOUND = {"refused_sound": NONE, "trusted_corrupt": NONE}  # every trial
EXPECTED = {  # case, mode -> the counts that must be none or some
    ("service", "WAL+FULL"): {"acknowledged_lost": NONE, "corrupt": NONE},
    ("service", "WAL+NORMAL"): {"acknowledged_lost": SOME, "corrupt": NONE},
    ("service", "DELETE+FULL"): {"acknowledged_lost": SOME, "corrupt": NONE},
    ("service", "DELETE+EXTRA"): {"acknowledged_lost": NONE, "corrupt": NONE},
    ("service", "WAL+OFF"): {"acknowledged_lost": SOME, "corrupt": ANY},
    ("service_per_call", "WAL+NORMAL"): {"acknowledged_lost": NONE,
                                         "corrupt": NONE},
    ("as_shipped", "WAL+as opened"): {"acknowledged_lost": NONE, "corrupt": NONE},
    ("as_shipped", "service WAL+as opened, worker WAL+as opened"): {
        "acknowledged_lost": NONE, "double_charges": NONE,
        "unpaid_after_resume": NONE, "corrupt": NONE},
    ("pay_then_checkpoint", "service WAL+FULL, worker WAL+NORMAL"): {
        "acknowledged_lost": NONE, "double_charges": NONE,
        "unpaid_after_resume": NONE, "corrupt": NONE},
    ("pay_then_checkpoint", "service WAL+NORMAL, worker WAL+FULL"): {
        "acknowledged_lost": SOME, "unpaid_after_resume": SOME,
        "double_charges": NONE, "corrupt": NONE},
    ("journal", "journal WAL+NORMAL, services WAL+FULL"): {
        "acknowledged_lost": SOME, "no_intent_for_done": SOME,
        "double_charges": NONE, "unfinished": NONE, "corrupt": NONE},
    ("journal", "journal WAL+FULL, services WAL+FULL"): {
        "acknowledged_lost": NONE, "no_intent_for_done": NONE,
        "double_charges": NONE, "unfinished": NONE, "corrupt": NONE},
    ("journal_blind", "journal WAL+NORMAL, services WAL+FULL"): {
        "double_charges": SOME, "twice_without_doubt": SOME, "corrupt": NONE},
}
# What the runtime, as shipped, asked for each file
ASKED = {"payments.sqlite": ["FULL"], "worker.sqlite": ["NORMAL"]}


def judged(case: str, found: dict) -> dict:
    """The trial: its counts, and a check per expectation of ``EXPECTED``
    (and, as shipped, that the runtime asked for the levels of ``ASKED``)."""
    want = EXPECTED[(case, found["mode"])] | SOUND
    checks = {f"{name}_{rule}": (found[name] == 0 if rule == NONE else found[name] > 0)
              for name, rule in want.items() if rule != ANY}
    if case == "as_shipped":
        checks["asked_as_the_runtime_opens"] = all(
            ASKED[name] == levels for name, levels in found["asked"].items())
    return {"case": case, **found, "expected": want, "checks": checks,
            "holds": all(checks.values())}


def plans(quick: bool, seed: int) -> list[tuple]:
    """(case, runner, args, options) of every trial, in order."""
    models = (SYNCED_ONLY, UNSYNCED_SUBSETS)
    payments, pairs = (2, 2) if quick else (5, 4)
    sampled = {"budget": 6 if quick else 24, "seed": seed}
    paired = {**sampled, "budget": 4 if quick else 12}
    plan = [("service", service_case, (mode, payments), {"model": m, **sampled})
            for mode in SERVICE_MODES for m in models]
    plan.append(("service_per_call", service_case, (NORMAL, payments),
                 {"model": SYNCED_ONLY, "held_open": False}))
    plan += [("as_shipped", service_case, (AS_SHIPPED, payments),
              {"model": m, **sampled}) for m in models]
    plan += [("as_shipped", pay_then_checkpoint_case, (AS_SHIPPED, AS_SHIPPED, pairs),
              {"model": m, **paired}) for m in ((SYNCED_ONLY,) if quick else models)]
    plan += [("pay_then_checkpoint", pay_then_checkpoint_case, (s, w, pairs),
              {"model": m, **paired})
             for s, w in ((FULL, NORMAL), (NORMAL, FULL)) for m in models]
    plan += [("journal", journal_case, (mode,),
              {"model": m, "seed": seed, "budget": 6})
             for mode in (NORMAL, FULL) for m in ((SYNCED_ONLY,) if quick else models)]
    plan.append(("journal_blind", journal_case, (NORMAL,),
                 {"model": SYNCED_ONLY, "actions": blind_mail_actions}))
    return plan


def trial(case: str, runner, positional: tuple, options: dict) -> experiment.Trial:
    """One row of ``plans``: labelled by its case, its modes and its model."""
    modes = "/".join(str(arg) for arg in positional if isinstance(arg, Mode))
    return experiment.Trial(f"{case} {modes} {options['model']}",
                            {"case": case, "model": options["model"]},
                            (case, runner, positional, options))


def run_case(harness, folder: Path, case: str, runner, positional: tuple,
             options: dict) -> dict:
    """The case's run recorded, cut and judged; its start and end are the
    parent's instants (the crash points are disk calls, not times)."""
    moments = Moments()
    moments.mark("recording starts")
    found = runner(folder, *positional, **options)
    moments.mark(f"{found['images']} images judged:"
                 f" {found['acknowledged_lost']} lost, {found['corrupt']} corrupt")
    return judged(case, found) | {"moments": moments}


def run(args) -> tuple[dict, list[dict], dict]:
    # The recorded runs need no disk (the recording is the model): in memory
    # when the machine has a tmpfs. The cost is measured on the real disk.
    trials = experiment.run_trials(
        [trial(*row) for row in plans(args.quick, args.seed)], run_case, where=SCRATCH)
    with tempfile.TemporaryDirectory(prefix="ch11-cost-") as directory:
        cost = commit_cost(directory, commits=10 if args.quick else 40,
                           rounds=3 if args.quick else 7)
    ran = [t for t in trials if "error" not in t]  # a full tmpfs fails a trial
    lost = {t["mode"]: t["acknowledged_lost"] for t in ran
            if t["case"] == "service" and t["model"] == SYNCED_ONLY}
    summary = {"trials": len(trials), "held": sum(t["holds"] for t in trials),
               "crash_points": sum(t["crash_points"] for t in ran),
               "images": sum(t["images"] for t in ran),
               "us_per_commit": {level: c["us_per_commit"]
                                 for level, c in cost.items()},
               "images_losing_acknowledged_synced_only": lost}
    return summary, trials, {"cost": cost, "apsw": {
        "version": apsw.apsw_version(), "sqlite": apsw.sqlite_lib_version()}}


main = experiment.script(
    __file__, evidence_id=EVIDENCE_ID, run=run, parser=experiment.command_line(
        __doc__, quick_help="two payments per run, smaller samples, the journal "
        "under synced_only only: what the test suite runs", seed=11))

if __name__ == "__main__":
    sys.exit(main())
