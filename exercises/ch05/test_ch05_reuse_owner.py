"""Grades exercise 05.1 (reuse_owner.py)."""

import dataclasses

import pytest

from crashcourse import claims, fence
from crashcourse.store import opened

T0 = 1_800_000_000.0


@pytest.fixture
def mod(answer):
    return answer("ch05", "reuse_owner")


@pytest.fixture
def conn(tmp_path):
    with opened(tmp_path / "shop.db") as conn:
        fence.install(conn)
        yield conn


def test_the_old_claim_is_refused_as_superseded(mod, conn):
    work = claims.enqueue(conn, "phone:flour", "counter", "Restock flour")
    old, new, refusal = mod.replace_under_same_label(conn, work, "shop-worker", 5, T0)
    assert old.owner == new.owner == "shop-worker"
    assert (old.generation, new.generation) == (1, 2)
    assert isinstance(refusal, fence.StaleClaim) and refusal.reason == "superseded"


def test_nothing_the_old_holder_tried_is_stored(mod, conn):
    work = claims.enqueue(conn, "phone:flour", "counter", "Restock flour")
    old, new, _ = mod.replace_under_same_label(conn, work, "shop-worker", 5, T0)
    row = claims.work_row(conn, work)
    assert (row["status"], row["generation"], row["outcome"]) == ("RUNNING", 2, None)
    refused = conn.execute("SELECT generation, action FROM refusals").fetchall()
    assert [tuple(r) for r in refused] == [(1, "finish")]
    granted = conn.execute("SELECT generation, owner FROM claims ORDER BY generation")
    assert [tuple(r) for r in granted] == [(1, "shop-worker"), (2, "shop-worker")]
    assert new.expires == pytest.approx(old.expires + 5)


def test_labels_tell_two_claims_under_one_owner_apart(mod, conn):
    work = claims.enqueue(conn, "phone:flour", "counter", "Restock flour")
    old, new, _ = mod.replace_under_same_label(conn, work, "shop-worker", 5, T0)
    first, second = mod.claim_label(old), mod.claim_label(new)
    assert first != second
    for label in (first, second):
        assert "shop-worker" in label and work in label


def test_a_label_depends_on_the_claim_alone(mod, conn):
    """The same claim, logged twice or read back by another process, gets the
    same label: a label made of the clock, a pid or an object's address tells
    two log lines apart, not two claims."""
    work = claims.enqueue(conn, "phone:flour", "counter", "Restock flour")
    old, new, _ = mod.replace_under_same_label(conn, work, "shop-worker", 5, T0)
    for claim in (old, new):
        copy = dataclasses.replace(claim)  # an equal claim, another object
        assert copy is not claim
        assert mod.claim_label(copy) == mod.claim_label(claim)
        assert mod.claim_label(claim) == mod.claim_label(claim)
