"""Grades exercise 08.2 (predict.py): on paper, then real workers at the same
boundaries: a SIGKILL, two recovery workers released together, a real
supplier process. Who won and what each service recorded are read from rows;
what the loser saw is its exit status and its one line of output."""

import json
from collections import Counter

import pytest

from crashcourse import workflow
from crashcourse.lab.harness import Harness
from crashcourse.services import mail, payments
from crashcourse.services.supplier.process import start_supplier
from crashcourse.store import opened, table_rows
from crashcourse.workers.workflow_worker import BOUNDARIES, build_world

KEYS = {step: f"key-of-{step}" for step in ("reserve", "charge", "mail")}
RACERS = ("recovery-a", "recovery-b")
WAIT_S = 60  # bounded waits: a worker that overruns is killed and the test fails
# The killed worker's attempt is held this long: the recovery workers wait it
# out (they cannot know it is dead). Above a call's declared wait, so a call
# can be admitted, and short, so the test is.
LEASE = "7"
LOSER = {"exit_code": 3, "refused": "stale_version", "transitions": []}


def moves(first: int, *rows: tuple) -> list[dict]:
    """History rows from version ``first`` on: (from_state, to_state, note)."""
    return [{"version": first + n, "from_state": a, "to_state": b, "note": note}
            for n, (a, b, note) in enumerate(rows)]


R, W = "running", "waiting_for_approval"
STEP_DONE = {step: [(R, R, f"attempt {step}"), (R, R, f"outcome {step}")]
             for step in KEYS}
FINISH = (R, "applied", "every step done")


@pytest.fixture
def predict(sealed):
    """The answer, sealed (exercises' conftest): a prediction is made from the
    boundary and the keys alone, recorded as it returns, before any worker
    runs."""
    return sealed("ch08", "predict", "solutions", "experiment").predict


def test_a_kill_before_the_first_call(predict):
    said = predict("before_remote:reserve", KEYS)
    expected = {
        "winner": {"exit_code": 0, "transitions": moves(
            3, *STEP_DONE["reserve"], *STEP_DONE["charge"], *STEP_DONE["mail"],
            FINISH)},
        "loser": LOSER, "final_state": "applied",
        "service_ops": {"key-of-reserve": 1, "key-of-charge": 1, "key-of-mail": 1}}
    assert said == expected, (
        "a kill before the reservation's call was predicted wrong: the probe"
        " finds nothing, so the winner attempts and runs every step from"
        " version 3, and the loser is refused stale_version (the pair it names"
        f" is legal, its version is not); predicted {said}, expected {expected}")


def test_a_kill_after_the_last_call(predict):
    said = predict("after_remote:mail", KEYS)
    expected = moves(7, (R, R, "outcome mail"), FINISH)
    assert said["winner"]["transitions"] == expected, (
        "a kill after the mail's call was predicted to send it again: the"
        " winner asks the mail provider by the key first, finds the message"
        " and writes one outcome row; predicted the winner's moves"
        f" {said['winner']['transitions']}, expected {expected}")
    assert said["loser"] == LOSER and said["final_state"] == "applied", (
        "the loser read the same version as the winner and is refused"
        " stale_version, exit 3, no row, and the workflow ends applied;"
        f" predicted loser {said['loser']}, final state {said['final_state']!r}")
    assert said["service_ops"] == {key: 1 for key in KEYS.values()}, (
        "every step's effect is recorded once by its service (a probe is a"
        f" lookup, not a record); predicted {said['service_ops']}")


def test_a_kill_before_anything_was_written(predict):
    said = predict("after_read", KEYS)
    expected = moves(
        1, ("pending", R, "run"), *STEP_DONE["reserve"], *STEP_DONE["charge"],
        *STEP_DONE["mail"], FINISH)
    assert said["winner"]["transitions"] == expected, (
        "a kill at after_read left the workflow pending at version 0: the"
        " winner writes every move from 'run' (version 1) on; predicted"
        f" {said['winner']['transitions']}, expected {expected}")
    assert said["loser"] == LOSER, (
        "the loser's 'run' names a legal move at a version that is no longer"
        f" the row's: stale_version, exit 3, no row; predicted {said['loser']},"
        f" expected {LOSER}")


@pytest.mark.parametrize("boundary", ["before_remote:charge", "after_remote:charge"])
def test_without_an_approval_the_winner_waits(predict, boundary):
    """After the call or before it, the probe finds no payment: a charge the
    payment service refused left nothing to find."""
    said = predict(boundary, KEYS, approved=False)
    expected = {
        "winner": {"exit_code": 0, "transitions": moves(
            5, (R, R, "attempt charge"), (R, W, "outcome charge"))},
        "loser": LOSER, "final_state": W,
        "service_ops": {"key-of-reserve": 1, "key-of-charge": 0, "key-of-mail": 0}}
    assert said == expected, (
        f"without an approval a kill at {boundary} was predicted wrong: a"
        " refused charge is no payment, so the probe finds nothing, the winner"
        " attempts the charge again, is refused, moves to waiting_for_approval"
        f" and exits 0 (waiting is no failure); predicted {said}, expected"
        f" {expected}")


def test_without_an_approval_a_reservation_already_made_is_kept(predict):
    said = predict("after_remote:reserve", KEYS, approved=False)
    expected = moves(3, (R, R, "outcome reserve"), (R, R, "attempt charge"),
                     (R, W, "outcome charge"))
    assert said["winner"]["transitions"] == expected, (
        "a kill after the reservation's call was predicted to reserve again:"
        " the winner's probe finds the reservation and writes one outcome row,"
        " then the charge waits for its approval; predicted"
        f" {said['winner']['transitions']}, expected {expected}")
    assert said["final_state"] == W, (
        "without an approval the workflow ends waiting_for_approval, the"
        f" reservation kept; predicted {said['final_state']!r}")


@pytest.mark.parametrize(("boundary", "keys", "approved"), [
    ("before_remote:notify", KEYS, True),  # no such step
    ("before_charge", KEYS, True),  # no such boundary
    ("before_remote:mail", KEYS, False),  # the charge waits: mail never begins
    ("after_remote:reserve", {"reserve": "k", "charge": "k"}, True),  # no mail key
], ids=["unknown-step", "unknown-boundary", "unreachable", "missing-key"])
def test_a_boundary_that_cannot_be_predicted_is_refused(predict, boundary, keys,
                                                        approved):
    with pytest.raises(ValueError):
        said = predict(boundary, keys, approved=approved)
        pytest.fail(
            f"a boundary the worker never reaches ({boundary}, keys {keys},"
            f" approved={approved}) was given a prediction instead of a"
            f" ValueError: {said}")


REACHABLE = [(boundary, True) for boundary in BOUNDARIES] + [
    (boundary, False) for boundary in BOUNDARIES if not boundary.endswith(":mail")]


@pytest.mark.parametrize(("boundary", "approved"), REACHABLE,
                         ids=[f"{b}{'' if a else '-unapproved'}" for b, a in REACHABLE])
def test_every_reachable_boundary_has_a_prediction(predict, boundary, approved):
    """Every boundary the worker reaches (without the approval, all but the
    mail's) has one outcome to predict: a refusal is for what cannot happen."""
    found = predict(boundary, KEYS, approved=approved)
    assert set(found) == {"winner", "loser", "final_state", "service_ops"}, (
        f"the prediction at {boundary} (approved={approved}) does not have the"
        " four parts winner, loser, final_state, service_ops:"
        f" it has {sorted(found)}")
    assert found["loser"] == LOSER, (
        f"at {boundary} the loser was predicted other than refused"
        " stale_version, exit 3, no row: it read the version the winner moved"
        f" on; predicted {found['loser']}, expected {LOSER}")
    assert set(found["service_ops"]) == set(KEYS.values()), (
        f"at {boundary} the service counts are not by the workflow's keys:"
        f" predicted {sorted(found['service_ops'])}, keys {sorted(KEYS.values())}")
    assert all(count in (0, 1) for count in found["service_ops"].values()), (
        "every effect happens at most once: the services dedupe by key;"
        f" predicted {found['service_ops']}")


def keys_of(built: dict) -> dict[str, str]:
    """The operation keys the workflow's row holds from its creation on."""
    with opened(built["paths"]["workflow"]) as conn:
        seen = workflow.read(conn, built["workflow_id"])
    return {choice["step"]: choice["operation_key"] for choice in seen["choices"]}


def race_after_a_kill(directory, built: dict, boundary: str) -> dict:
    """Kill a worker at ``boundary``, race two recovery workers, and read what
    they did back, in the prediction's shape."""
    where, workflow_id = built["paths"], built["workflow_id"]
    with Harness() as harness, start_supplier(harness, where["supplier"]) as sup:

        def worker(who: str, stop_at: str):
            started = harness.start(
                ["-m", "crashcourse.workers.workflow_worker", "--dir",
                 str(directory), "--workflow", workflow_id, "--who", who,
                 "--url", sup.url, "--lease", LEASE], stop_at=stop_at)
            started.wait_for_boundary(WAIT_S)
            return started

        code = worker("worker-1", boundary).kill().returncode
        assert code == -9, (
            "the grader's world, not your answer: the first worker was to be"
            f" SIGKILLed at {boundary}, and exited {code}")
        with opened(where["workflow"]) as conn:
            after = workflow.read(conn, workflow_id)["version"]
        held = {who: worker(who, "after_read") for who in RACERS}
        for racer in held.values():  # both read the same version: go together
            racer.release()
        finished = {who: racer.finish(WAIT_S) for who, racer in held.items()}
        with opened(where["supplier"]) as conn:
            ops = Counter(r["operation_key"] for r in table_rows(conn, "requests")
                          if r["method"] == "POST")
    ops.update(p["key"] for p in payments.snapshot(where["payments"])["payments"])
    ops.update(m["operation_key"] for m in mail.messages(where["mail"]))
    with opened(where["workflow"]) as conn:
        seen = workflow.read(conn, workflow_id)
        written = [h for h in workflow.history(conn, workflow_id)
                   if h["version"] > after]
    keys = keys_of(built)
    writers = {h["who"] for h in written}
    assert len(writers) == 1, (
        "the grader's world, not your answer: one recovery worker makes every"
        f" move after the kill, and these wrote rows: {writers}")
    [winner], [loser] = writers, set(RACERS) - writers

    def did(who: str) -> list[dict]:
        return [{k: h[k] for k in ("version", "from_state", "to_state", "note")}
                for h in written if h["who"] == who]

    lines = finished[loser].stdout.strip().splitlines()
    return {"keys": keys, "observed": {
        "winner": {"exit_code": finished[winner].returncode,
                   "transitions": did(winner)},
        "loser": {"exit_code": finished[loser].returncode,
                  "refused": json.loads(lines[-1]).get("refused") if lines else None,
                  "transitions": did(loser)},
        "final_state": seen["state"],
        "service_ops": {key: ops[key] for key in keys.values()}}}


@pytest.mark.parametrize(("boundary", "approved"), [
    ("after_read", True),
    ("after_remote:reserve", True),
    ("before_remote:charge", True),
    ("after_remote:charge", True),
    ("before_remote:mail", True),
    ("after_remote:charge", False),
], ids=["after_read", "after_remote:reserve", "before_remote:charge",
        "after_remote:charge", "before_remote:mail", "after_remote:charge-unapproved"])
def test_the_prediction_matches_the_real_race(predict, tmp_path, boundary, approved):
    """The prediction is made once, for the workflow's own keys, and recorded
    before any worker starts: nothing the race shows can change it."""
    built = build_world(str(tmp_path), approved=approved)
    keys = keys_of(built)
    predicted = predict(boundary, keys, approved=approved)
    ran = race_after_a_kill(tmp_path, built, boundary)
    assert ran["keys"] == keys, (
        "the grader's world, not your answer: the workflow's keys changed"
        f" during the race: {keys} before, {ran['keys']} after")
    assert predicted == ran["observed"], (
        f"the real race after a kill at {boundary} (approved={approved}) left"
        " rows other than predicted: after the call the winner asks the"
        " service by the key and records what it finds, before it calls only"
        f" once; predicted {predicted}, the rows show {ran['observed']}")
