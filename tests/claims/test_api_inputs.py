"""The door checks of the claims API (issue 14): a string where a bool goes, a
bool or NaN where a number goes, empty text, each refused with a clear
TypeError or ValueError BEFORE anything is written; and the shared checks in
``crashcourse.validate`` those refusals are made of."""

from __future__ import annotations

import math

import pytest

from crashcourse import claims, validate
from crashcourse.claims import fence
from crashcourse.store import count_rows

T0 = 1_000_000.0


# ``conn`` (tests/conftest.py): a fresh store on each backend, with these:
pytestmark = pytest.mark.installs.with_args(fence.install)


def held(conn) -> tuple[int, int, list]:
    """Claims granted, work queued, and every (status, generation) of work."""
    states = [tuple(row) for row in conn.execute(
        "SELECT status, generation FROM work ORDER BY id")]
    return count_rows(conn, "claims"), count_rows(conn, "work"), states


@pytest.mark.parametrize("control", ["false", "true", "", 0, 1, None, 1.0])
def test_enqueue_refuses_a_control_that_is_not_a_bool(conn, control):
    # "false" is truthy: coerced, it would queue operator CONTROL work
    with pytest.raises(TypeError, match="control must be True or False"):
        claims.enqueue(conn, "phone:1", "s1", "restock", control=control)
    assert count_rows(conn, "work") == 0


def test_enqueue_keeps_true_and_false(conn):
    urgent = claims.enqueue(conn, "op:stop", "s1", "stop", control=True)
    plain = claims.enqueue(conn, "phone:1", "s2", "restock", control=False)
    assert [claims.work_row(conn, w)["control"] for w in (urgent, plain)] == [1, 0]
    # the same origin with the same content is the same work, not a conflict
    assert claims.enqueue(conn, "op:stop", "s1", "stop", control=True) == urgent


@pytest.mark.parametrize("field, value", [
    ("origin", ""), ("origin", "  "), ("origin", 7), ("session", ""),
    ("prompt", None), ("role", ""), ("subject", None),
])
def test_enqueue_refuses_empty_or_non_text_fields(conn, field, value):
    fields = {"origin": "phone:1", "session": "s1", "prompt": "restock"} | {
        field: value}
    with pytest.raises(ValueError, match=field):
        claims.enqueue(conn, **fields)
    assert count_rows(conn, "work") == 0


@pytest.mark.parametrize("options, error", [
    ({"control_only": "no"}, TypeError), ({"control_only": 1}, TypeError),
    ({"control_only": None}, TypeError), ({"role": ""}, ValueError),
    ({"role": None}, ValueError), ({"work_id": ""}, ValueError),
    ({"work_id": 3}, ValueError), ({"now": math.nan}, ValueError),
    ({"now": True}, ValueError), ({"ttl": math.inf}, ValueError),
    ({"ttl": True}, TypeError), ({"ttl": "30"}, TypeError),
])
def test_claim_refuses_bad_arguments_and_grants_nothing(conn, options, error):
    claims.enqueue(conn, "phone:1", "s1", "restock", control=True)
    before = held(conn)
    with pytest.raises(error):
        claims.claim(conn, "w", **({"ttl": 30, "now": T0} | options))
    assert held(conn) == before == (0, 1, [("READY", 0)])


def test_a_valid_claim_still_takes_the_work(conn):
    work = claims.enqueue(conn, "phone:1", "s1", "restock", control=True)
    got = claims.claim(conn, "w", ttl=30, now=T0, control_only=True, work_id=work)
    assert got is not None and got.id == work and got.generation == 1


@pytest.mark.parametrize("origin", [None, 5, b"phone:1", "", " "])
def test_work_id_for_needs_text(origin):
    with pytest.raises(ValueError, match="origin"):
        claims.work_id_for(origin)


@pytest.mark.parametrize("work_id", [None, "", 7])
def test_work_row_and_cancel_name_the_bad_id(conn, work_id):
    with pytest.raises(ValueError, match="work id"):
        claims.work_row(conn, work_id)
    with pytest.raises(ValueError, match="work id"):
        fence.cancel(conn, work_id, now=T0)


@pytest.mark.parametrize("value", [True, False])
def test_check_flag_keeps_a_bool(value):
    assert validate.check_flag("flag", value) is value


@pytest.mark.parametrize("value", ["false", "True", 0, 1, None, 0.0, [], "0"])
def test_check_flag_refuses_everything_else(value):
    with pytest.raises(TypeError, match="flag must be True or False"):
        validate.check_flag("flag", value)


def test_check_text_none_ok_is_only_for_none():
    assert validate.check_text("id", None, none_ok=True) is None
    assert validate.check_text("id", "w-1", none_ok=True) == "w-1"
    for bad in ("", " ", 0):
        with pytest.raises(ValueError):
            validate.check_text("id", bad, none_ok=True)
    with pytest.raises(ValueError):
        validate.check_text("id", None)


def test_check_place_looks_and_creates_nothing(tmp_path):
    (tmp_path / "a-file").write_text("")
    assert validate.check_place("--state", str(tmp_path / "new.sqlite"))
    for bad in ("", " ", str(tmp_path), str(tmp_path / "missing" / "x.sqlite"),
                str(tmp_path / "a-file" / "x.sqlite"), "/dev/null/x.sqlite", None):
        with pytest.raises(ValueError):
            validate.check_place("--state", bad)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


@pytest.mark.parametrize("message", ["text", ["a"], None, 3])
def test_a_transcript_message_that_is_not_a_dict_is_refused_unwritten(conn, message):
    # written, it would make every later read of the transcript fail
    claims.enqueue(conn, "phone:9", "s9", "restock")
    claim = claims.claim(conn, "w1", ttl=30)
    with pytest.raises(TypeError, match="message must be a dict"):
        fence.observe(conn, claim, message)
    assert count_rows(conn, "transcript") == 0
    fence.observe(conn, claim, {"said": "hello"})
    assert [m["said"] for m in fence.transcript(conn, claim.id)] == ["hello"]


@pytest.mark.parametrize("generation", [True, "3", 2.0, None])
def test_a_retry_delay_needs_an_integer_generation(generation):
    with pytest.raises(TypeError, match="generation must be an int"):
        fence.retry_delay(generation)
    assert fence.retry_delay(1) == 2.0


@pytest.mark.parametrize("step", [True, False, -1, 1.5, "", "  ", None])
def test_an_operation_key_needs_a_real_step(step):
    from crashcourse.effects import operation_key

    with pytest.raises((TypeError, ValueError)):
        operation_key("task-1", step, "charge", {"cents": 5})
    assert operation_key("task-1", 0, "charge", {}) != operation_key(
        "task-1", "reserve", "charge", {})


@pytest.mark.parametrize("call", ["set_budget", "budget_snapshot", "set_expiry",
                                  "set_policy_version", "payment_history"])
def test_budget_and_authority_refuse_a_payments_file_that_is_not_there(tmp_path,
                                                                      call):
    from crashcourse.services.payments import authority, budget
    from crashcourse.store import StoreMissing

    path = tmp_path / "payments.db"
    path.write_bytes(b"")  # truncated: once a payment history, now 0 bytes
    calls = {"set_budget": lambda: budget.set_budget(path, 3, {"USD": 500}),
             "budget_snapshot": lambda: budget.budget_snapshot(path),
             "set_expiry": lambda: authority.set_expiry(path, "order-1", None),
             "set_policy_version": lambda: authority.set_policy_version(path, 2),
             "payment_history": lambda: authority.payment_history(path, "k")}
    with pytest.raises(StoreMissing):
        calls[call]()
    assert path.read_bytes() == b""
