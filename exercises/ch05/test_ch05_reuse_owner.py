"""Grades exercise 05.1 (reuse_owner.py)."""

import dataclasses
import inspect
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crashcourse import claims
from crashcourse.claims import Claim, fence
from crashcourse.store import opened

T0 = 1_800_000_000.0


@pytest.fixture
def finishes(monkeypatch):
    """Every call of ``fence.finish`` while the answer runs: the claim it was
    offered and what it raised. Installed before the answer is loaded, so a
    ``from crashcourse.claims.fence import finish`` sees it too."""
    calls = []
    real = fence.finish
    signature = inspect.signature(real)

    def finish(*args, **kwargs):
        call = {"claim": signature.bind(*args, **kwargs).arguments["claim"],
                "raised": None}
        calls.append(call)
        try:
            return real(*args, **kwargs)
        except BaseException as raised:
            call["raised"] = raised
            raise

    monkeypatch.setattr(fence, "finish", finish)
    return calls


@pytest.fixture
def mod(answer, finishes):
    return answer("ch05", "reuse_owner")


@pytest.fixture
def conn(tmp_path):
    with opened(tmp_path / "shop.db") as conn:
        fence.install(conn)
        yield conn


def test_the_old_claim_is_refused_as_superseded(mod, conn):
    work = claims.enqueue(conn, "phone:flour", "counter", "Restock flour")
    old, new, refusal = mod.replace_under_same_label(conn, work, "shop-worker", 5, T0)
    assert old.owner == new.owner == "shop-worker", (
        f"the two claims are owned by {old.owner!r} and {new.owner!r}: both must"
        " be taken under the one label 'shop-worker'")
    assert (old.generation, new.generation) == (1, 2), (
        f"the claims have generations {old.generation} and {new.generation}:"
        " the replacement must claim the same work again (generation 2)")
    assert isinstance(refusal, fence.StaleClaim) and refusal.reason == "superseded", (
        f"the old claim's finish was answered {refusal!r}, not a StaleClaim"
        " 'superseded': the fence must refuse it for its generation, whatever"
        " its owner is called")


def test_the_refusal_is_the_one_the_database_gave(mod, conn, finishes):
    """The refusal returned is the one ``fence.finish`` raised when offered the
    old claim: a ``StaleClaim`` made by hand, with a refusal row written
    beside it, shows what the answer expected, not what the fence decided."""
    work = claims.enqueue(conn, "phone:flour", "counter", "Restock flour")
    old, new, refusal = mod.replace_under_same_label(conn, work, "shop-worker", 5, T0)
    offered = [call for call in finishes if call["claim"] == old]
    assert offered, "fence.finish was never offered the old claim"
    assert any(call["raised"] is refusal for call in offered), (
        "the refusal returned is not the one fence.finish raised")
    assert all(call["claim"] != new for call in finishes), (
        "the live claim (generation 2) was finished too: only the old claim"
        " is offered to fence.finish, the live one goes on")


def test_nothing_the_old_holder_tried_is_stored(mod, conn):
    work = claims.enqueue(conn, "phone:flour", "counter", "Restock flour")
    old, new, _ = mod.replace_under_same_label(conn, work, "shop-worker", 5, T0)
    row = claims.work_row(conn, work)
    found = (row["status"], row["generation"], row["outcome"])
    assert found == ("RUNNING", 2, None), (
        "the old holder's finish changed the work row (status, generation,"
        f" outcome = {found}): a refused finish must store nothing")
    refused = [tuple(r) for r in conn.execute(
        "SELECT generation, action FROM refusals").fetchall()]
    assert refused == [(1, "finish")], (
        f"the refusals table holds {refused}, not one refused finish of"
        " generation 1: the refusal must come from the fence, once")
    granted = [tuple(r) for r in conn.execute(
        "SELECT generation, owner FROM claims ORDER BY generation")]
    assert granted == [(1, "shop-worker"), (2, "shop-worker")], (
        f"the claims table holds {granted}, not two claims under 'shop-worker'")
    assert new.expires == pytest.approx(old.expires + 5), (
        f"the replacement's lease ends at {new.expires}, not one ttl after the"
        f" first lease's end ({old.expires} + 5): it must claim once that lease"
        " ended")


def test_labels_tell_two_claims_under_one_owner_apart(mod, conn):
    work = claims.enqueue(conn, "phone:flour", "counter", "Restock flour")
    old, new, _ = mod.replace_under_same_label(conn, work, "shop-worker", 5, T0)
    first, second = mod.claim_label(old), mod.claim_label(new)
    assert first != second, (
        f"both claims got the label {first!r}: a label must tell two claims"
        " under one owner apart (their generation)")
    for label in (first, second):
        assert "shop-worker" in label and work in label, (
            f"the label {label!r} does not name its owner and its work")


def test_a_label_depends_on_the_claim_alone(mod, conn):
    """The same claim, logged twice or read back by another process, gets the
    same label: a label made of the clock, a pid or an object's address tells
    two log lines apart, not two claims."""
    work = claims.enqueue(conn, "phone:flour", "counter", "Restock flour")
    old, new, _ = mod.replace_under_same_label(conn, work, "shop-worker", 5, T0)
    for claim in (old, new):
        copy = dataclasses.replace(claim)  # an equal claim, another object
        assert copy is not claim, "the set-up could not copy the claim"
        assert mod.claim_label(copy) == mod.claim_label(claim), (
            f"an equal copy of a claim got {mod.claim_label(copy)!r}, the claim"
            f" {mod.claim_label(claim)!r}: the label is made of the object"
            " (id, address), not of the claim's fields")
        assert mod.claim_label(claim) == mod.claim_label(claim), (
            "one claim labelled twice got two labels: the label is made of the"
            " clock or a counter, not of the claim")


LABELS_IN_A_CHILD = r"""
import importlib.util, json, sys
from crashcourse.claims import Claim

spec = importlib.util.spec_from_file_location("answer_in_child", sys.argv[1])
answer = importlib.util.module_from_spec(spec)
sys.modules["answer_in_child"] = answer
spec.loader.exec_module(answer)
print(json.dumps([answer.claim_label(Claim(**fields))
                  for fields in json.loads(sys.argv[2])]))
"""


def labels_in_another_process(mod, found: list, hash_seed: str) -> list:
    """The labels another process gives these claims, rebuilt there from their
    fields (as read back from the database), under its own ``hash_seed``."""
    ran = subprocess.run(
        [sys.executable, "-c", LABELS_IN_A_CHILD, mod.__file__,
         json.dumps([dataclasses.asdict(claim) for claim in found])],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONHASHSEED": hash_seed})
    assert ran.returncode == 0, (
        "claim_label failed in another process: " + ran.stderr[-2000:])
    return json.loads(ran.stdout.splitlines()[-1])


def test_another_process_gives_a_claim_the_same_label(mod, conn):
    """A label read in one process's log is looked up in another's: two
    processes must give one claim one label. Python salts ``hash`` of a
    string per process, so a label made of ``hash(claim)`` names a claim only
    inside the process that printed it."""
    work = claims.enqueue(conn, "phone:flour", "counter", "Restock flour")
    old, new, _ = mod.replace_under_same_label(conn, work, "shop-worker", 5, T0)
    here = [mod.claim_label(old), mod.claim_label(new)]
    assert here[0] != here[1], f"both claims got the label {here[0]!r}"
    for seed in ("1", "2"):
        there = labels_in_another_process(mod, [old, new], seed)
        assert there == here, (
            f"another process (PYTHONHASHSEED={seed}) labels the claims {there},"
            f" this one {here}: a label made of hash() names a claim only in"
            " the process that printed it")


# --- generated claims -------------------------------------------------------

TEXT = st.text(alphabet="abcdefghijklmnopqrstuvwxyz-0123456789", min_size=1,
               max_size=12)
CLAIM = st.builds(Claim, id=st.sampled_from(["work-5ca86aabffc0", "work-0e1f2a3b4c5d"]),
                  session=st.just("counter"), prompt=st.just("Restock flour"),
                  subject=st.just(""), role=st.just("shop"),
                  owner=st.sampled_from(["shop-worker", "w1"]),
                  generation=st.integers(min_value=1, max_value=50),
                  expires=st.sampled_from([T0 + 10, T0 + 20, T0 + 30]),
                  epoch=st.just("epoch-1"))


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(one=CLAIM, other=CLAIM)
def test_two_claims_share_a_label_only_when_they_are_one_claim(mod, one, other):
    """Claims of one work under one owner with the same lease end but other
    generations (a claim cancelled, then another whose shorter lease ends at
    the same instant) are still two claims; one claim read twice is one."""
    same_claim = (one.id, one.generation) == (other.id, other.generation)
    if same_claim:
        other = dataclasses.replace(one)  # one claim: the row fixes the rest
    shared = mod.claim_label(one) == mod.claim_label(other)
    assert shared == same_claim, (
        f"claims {one.id} gen {one.generation} and {other.id} gen"
        f" {other.generation} {'share' if shared else 'do not share'} a label:"
        " two claims share one exactly when their work and generation are the"
        f" same (labels {mod.claim_label(one)!r}, {mod.claim_label(other)!r})")


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ttl=st.floats(min_value=0.5, max_value=3600.0, allow_nan=False),
       start=st.floats(min_value=T0 - 86_400, max_value=T0 + 86_400,
                       allow_nan=False),
       owner=TEXT)
def test_any_lease_and_label_the_old_claim_is_refused(mod, ttl, start, owner):
    """Leases of any length, any start, any owner label: the replacement comes
    exactly when the first lease ends, and the old claim is still refused."""
    with tempfile.TemporaryDirectory() as folder, \
            opened(Path(folder) / "shop.db") as conn:
        fence.install(conn)
        work = claims.enqueue(conn, "phone:flour", "counter", "Restock flour")
        old, new, refusal = mod.replace_under_same_label(conn, work, owner, ttl,
                                                         start)
        found = (old.owner, new.owner, new.generation)
        assert found == (owner, owner, 2), (
            f"with owner {owner!r}, ttl {ttl}, the claims are (old owner, new"
            f" owner, new generation) = {found}, not ({owner!r}, {owner!r}, 2)")
        assert refusal.reason == "superseded", (
            f"with ttl {ttl} from {start}, the old claim was refused as"
            f" {refusal.reason!r}, not 'superseded'")
        granted = conn.execute("SELECT claimed_at FROM claims WHERE generation = 2")
        claimed_at = granted.fetchone()[0]
        assert claimed_at == old.expires, (
            f"the replacement claimed at {claimed_at}, not when the first lease"
            f" ended ({old.expires}): with ttl {ttl} from {start}")
        assert mod.claim_label(old) != mod.claim_label(new), (
            f"with owner {owner!r} both claims got one label")
