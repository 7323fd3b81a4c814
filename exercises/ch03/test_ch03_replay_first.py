"""Grades exercise 03.1 (replay_first.py): each preview is compared with the
service's real answer, asked afterwards."""

import os
import re
import sqlite3
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crashcourse.services import payments
from crashcourse.services.payments import authority
from crashcourse.store import immediate, opened

ORDER, AMOUNT, CURRENCY = "PO-3001", 4000, "USD"
POLICY_READ = {"why": "the policy in force is the one in the file, not 1"}


@pytest.fixture
def preview(answer, unchanged_file):
    """The answer's preview, every call checked to leave the service's whole
    file as it was: every row, and the schema (a view, an index, a trigger)."""
    answered = answer("ch03", "replay_first").preview

    def checked(path, *request):
        with unchanged_file(path):
            return answered(path, *request)

    checked.unwatched = answered  # for a test whose rival changes the file
    return checked


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "payments.db"
    payments.install(path)
    payments.approve(path, ORDER, AMOUNT, CURRENCY)
    return path


def service_says(db, key, order=ORDER, amount=AMOUNT, currency=CURRENCY):
    """The service's real answer, in the preview's words."""
    try:
        said = payments.issue_payment(db, key, order, amount, currency)
    except payments.PaymentConflict:
        return "conflict"
    except payments.ApprovalRefused as refused:
        return f"refused: {refused.reason}"
    return {"committed": "would_commit"}.get(said, said)


def previewed(preview, db, key, order=ORDER, amount=AMOUNT, currency=CURRENCY,
              why="history first (what the key was used for), then the terms"
                  " in force now"):
    """The preview (checked to write nothing), then the service asked for real."""
    said = preview(db, key, order, amount, currency)
    real = service_says(db, key, order, amount, currency)
    assert said == real, (
        f"the preview does not read the file as the service does ({why}): it"
        f" said {said!r}, the service, asked afterwards, {real!r}; request"
        f" {key!r} {order!r} {amount} {currency!r}")
    return said


def previews(preview, db, expected, *request, **why):
    """``previewed``, and the answer this file must give: a preview the service
    agrees with is the answer's; what they both say is the grader's world."""
    said = previewed(preview, db, *request, **why)
    assert said == expected, (
        "the grader's world, not your answer: the preview and the service agree"
        f" on {said!r} for {request!r}, where this file should answer"
        f" {expected!r}")


def test_a_new_payment_would_commit(preview, db):
    previews(preview, db, "would_commit", "k1")
    paid = payments.snapshot(db)["payments"]
    assert len(paid) == 1, (  # the service's, not ours
        "the grader's world, not your answer: the service's own payment was to"
        f" leave one row, and there are {len(paid)}")


def test_revoke_before_payment_would_be_refused(preview, db):
    payments.revoke(db, ORDER)
    previews(preview, db, "refused: approval_revoked", "k1")


def test_revoke_after_payment_is_history(preview, db):
    payments.issue_payment(db, "k1", ORDER, AMOUNT, CURRENCY)
    payments.revoke(db, ORDER)
    previews(preview, db, "already_committed", "k1")
    previews(preview, db, "refused: approval_revoked", "k2")  # new effect


def test_history_outlives_every_term(preview, db):
    payments.issue_payment(db, "k1", ORDER, AMOUNT, CURRENCY)
    authority.set_expiry(db, ORDER, time.time() - 1)
    previews(preview, db, "refused: approval_expired", "k2")
    authority.set_policy_version(db, 2)
    previews(preview, db, "already_committed", "k1")
    payments.approve(db, ORDER, AMOUNT, CURRENCY)  # granted again, under version 2
    authority.set_policy_version(db, 3)
    previews(preview, db, "refused: policy_changed", "k3")


@pytest.mark.parametrize("granted_under", [1, 2, 3])
@pytest.mark.parametrize("policy", [1, 2, 3])
def test_the_current_policy_is_read_from_the_file(preview, db, policy,
                                                  granted_under):
    """The service's policy is whatever its file says, not 1: an approval
    granted again under the policy now in force authorizes a new payment,
    one granted under any other (older or newer) does not."""
    authority.set_policy_version(db, policy)
    payments.approve(db, ORDER, AMOUNT, CURRENCY, policy_version=granted_under)
    expected = ("would_commit" if policy == granted_under
                else "refused: policy_changed")
    previews(preview, db, expected, "k1", **POLICY_READ)


def test_a_new_payment_after_the_policy_moved_twice(preview, db):
    """Granted under 1, outdated by 2, granted again under 2: a new payment
    would commit; moved to 3, it would not."""
    authority.set_policy_version(db, 2)
    previews(preview, db, "refused: policy_changed", "k1", **POLICY_READ)
    payments.approve(db, ORDER, AMOUNT, CURRENCY)  # under the current one, 2
    previews(preview, db, "would_commit", "k1", **POLICY_READ)
    authority.set_policy_version(db, 3)
    previews(preview, db, "refused: policy_changed", "k2", **POLICY_READ)


@pytest.mark.parametrize("change", [("PO-3002", AMOUNT, CURRENCY),
                                    (ORDER, AMOUNT + 100, CURRENCY),
                                    (ORDER, AMOUNT, "EUR")],
                         ids=["order", "amount", "currency"])
def test_a_key_cannot_be_repurposed(preview, db, change):
    payments.issue_payment(db, "k1", ORDER, AMOUNT, CURRENCY)
    previews(preview, db, "conflict", "k1", *change,
             why="a key already used answers from what it paid: order, amount"
                 " and currency, not only that it exists")


def test_another_amount_under_a_new_key_is_not_approved(preview, db):
    previews(preview, db, "refused: not_approved", "k1", ORDER, 3000, CURRENCY,
             why="an approval covers its own amount only")


def test_a_payment_in_progress_does_not_hold_up_the_preview(preview, db):
    """Another process is inside ``issue_payment`` for k1: it holds the write
    lock and its row is not committed. The preview neither waits for it nor
    counts it."""
    with opened(db) as paying:
        paying.execute("BEGIN IMMEDIATE")
        paying.execute(
            "INSERT INTO payments (key, order_id, amount_cents, currency)"
            " VALUES ('k1', :order, :amount, :currency)",
            {"order": ORDER, "amount": AMOUNT, "currency": CURRENCY})
        started = time.monotonic()
        said = preview(db, "k1", ORDER, AMOUNT, CURRENCY)
        waited = time.monotonic() - started
        paying.execute("ROLLBACK")
    assert said == "would_commit", (  # an INSERT not yet committed is no payment
        "the preview counted a payment another process has inserted and not"
        f" committed: it said {said!r}, not 'would_commit'")
    assert waited < 2.5, f"the preview waited {waited:.1f} s for the write lock"


def test_a_payment_still_in_the_write_ahead_log_is_history(preview, db):
    """Another process holds the file open, so the payment just committed
    is still in the WAL, not yet in the main file: it is committed all the
    same (a copy of the main file alone does not hold it)."""
    with opened(db) as held:
        held.execute("SELECT count(*) FROM payments").fetchone()  # holds it open
        payments.issue_payment(db, "k1", ORDER, AMOUNT, CURRENCY)
        previews(preview, db, "already_committed", "k1")
        previews(preview, db, "conflict", "k1", ORDER, AMOUNT + 100)
        payments.revoke(db, ORDER)
        previews(preview, db, "refused: approval_revoked", "k2")


HISTORY = re.compile(r"\bpayments\b", re.IGNORECASE)
AUTHORITY = re.compile(r"\b(approvals|approval_terms|service_policy)\b",
                       re.IGNORECASE)


def service_says_of_a_copy(db):
    """The service's answer for k1 on a consistent copy of the file (SQLite's
    backup), the file itself untouched."""
    copy = db.with_name("copy.db")
    copy.unlink(missing_ok=True)
    source, target = sqlite3.connect(db), sqlite3.connect(copy)
    try:
        source.backup(target)
    finally:
        source.close()
        target.close()
    return service_says(copy, "k1")


class CommitBetweenTheReads:
    """Every connection opened while watching gets SQLite's statement trace.
    As the first statement that reads authority (approvals, their terms, the
    policy) starts after one that read only history (payments), a rival
    commits ``change`` in ONE transaction of its own. A preview from one
    snapshot answers for the file before it, or after it; a preview that took
    history and authority from two snapshots answers for neither."""

    def __init__(self, monkeypatch, db, change):
        self.db, self.change = db, change
        self.rival = sqlite3.connect(db, isolation_level=None, timeout=0)
        self.watching = self.history_read = self.fired = self.committed = False
        connect = sqlite3.connect

        def traced(*args, **kwargs):
            conn = connect(*args, **kwargs)
            if self.watching:
                conn.set_trace_callback(self.starting)
            return conn

        monkeypatch.setattr(sqlite3, "connect", traced)

    def starting(self, sql):
        try:
            history, authority = HISTORY.search(sql), AUTHORITY.search(sql)
            if authority and self.history_read and not self.fired:
                self.fired = True
                self.rival_commits()
            if history and not authority:
                self.history_read = True
        except Exception as fault:  # sqlite3 swallows it: the verdict says so
            self.committed, self.fault = None, fault

    def rival_commits(self):
        try:
            self.rival.executescript(f"BEGIN IMMEDIATE; {self.change} COMMIT;")
        except sqlite3.OperationalError as busy:
            if "locked" not in str(busy):
                raise
            return  # the preview holds the write lock (another test fails it)
        self.committed = True

    def __enter__(self):
        self.watching = True
        return self

    def __exit__(self, *exc):
        self.watching = False
        self.rival.close()


# (the file before, the rival's one transaction): the preview of k1 for
# 4000 USD must be the answer of one of the two files
BETWEEN = {
    "paid-for-another-order-and-revoked": (
        "would_commit", "conflict",
        "INSERT INTO payments (key, order_id, amount_cents, currency)"
        " VALUES ('k1', 'PO-3002', 4000, 'USD');"
        "UPDATE approvals SET revoked = 1 WHERE order_id = 'PO-3001';",
        False),
    "granted-again-and-paid-for-another-order": (
        "refused: approval_revoked", "conflict",
        "UPDATE approvals SET revoked = 0 WHERE order_id = 'PO-3001';"
        "INSERT INTO payments (key, order_id, amount_cents, currency)"
        " VALUES ('k1', 'PO-3002', 4000, 'USD');",
        True),
}


@pytest.mark.parametrize("case", sorted(BETWEEN))
def test_history_and_authority_come_from_one_snapshot(preview, db, monkeypatch,
                                                      case):
    """A payment and a change of authority commit together between the
    preview's read of history and its read of authority: its answer must be
    the file's before them or after them, never history from one and
    authority from the other."""
    before, after, change, revoked = BETWEEN[case]
    if revoked:
        payments.revoke(db, ORDER)
    copy = service_says_of_a_copy(db)
    assert copy == before, (
        "the grader's world, not your answer: the service was to answer"
        f" {before!r} before the rival's commit, and answered {copy!r}")
    with CommitBetweenTheReads(monkeypatch, db, change) as watch:
        said = preview.unwatched(db, "k1", ORDER, AMOUNT, CURRENCY)
    assert watch.committed is not None, f"the rival's commit failed: {watch.fault!r}"
    if not watch.committed:  # no rival turn: the file did not change
        assert said == before, (
            f"the file did not change, and the preview said {said!r} where the"
            f" service says {before!r}")
    else:
        assert said in (before, after), (
            f"the file said {before!r} before the rival's commit and {after!r}"
            f" after it; the preview said {said!r}: history and authority came"
            " from two snapshots")
    real = service_says(db, "k1")
    assert real == (after if watch.committed else before), (
        "the grader's world, not your answer: after the rival's turn the"
        f" service was to answer {after if watch.committed else before!r},"
        f" and answered {real!r}")


class CommitBetweenTheCopies:
    """A preview that copies the service's files itself (the main file, then
    its -wal, or the other way round) reads two files a writer changes apart.
    As the answer opens the second of the two, having read the first, a rival
    commits ONE transaction and checkpoints the log into the main file
    (TRUNCATE), as any other process's last close may. The copy then holds
    the main file of one moment and the log of another: torn. SQLite's own
    reads (a read transaction, the backup API) open no file through Python,
    and never meet the rival. Seen through Python's audit hook on ``open``:
    no sleep, the rival runs inside the answer's second open."""

    active = None  # the one watch in force (an audit hook cannot be removed)

    def __init__(self, db, change):
        self.db = Path(db).resolve()
        self.files = {self.db, Path(f"{self.db}-wal")}
        self.change, self.opened = change, set()
        self.fired = self.committed = self.checkpointed = False
        self.fault = None

    @staticmethod
    def audit(event, args):
        watch = CommitBetweenTheCopies.active
        if watch is None or event != "open" or watch.fired:
            return
        if not isinstance(args[0], str | bytes | os.PathLike):
            return  # a file descriptor
        try:
            path = Path(os.fsdecode(args[0])).resolve()
        except (OSError, ValueError):
            return
        if path in watch.files and path not in watch.opened:
            watch.opened.add(path)
            if len(watch.opened) == 2:  # the first file read, the second not
                watch.fired = True
                CommitBetweenTheCopies.active = None  # the rival's own opens
                try:
                    watch.rival_commits()
                except Exception as fault:  # the verdict says so
                    watch.fault, watch.committed = fault, None
                finally:
                    CommitBetweenTheCopies.active = watch

    def rival_commits(self):
        rival = sqlite3.connect(self.db, isolation_level=None, timeout=0)
        try:
            try:
                rival.executescript(f"BEGIN IMMEDIATE; {self.change} COMMIT;")
            except sqlite3.OperationalError as busy:
                if "locked" not in str(busy):
                    raise
                return  # the answer holds the write lock: the file stays as it was
            self.committed = True
            busy, _, _ = rival.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            self.checkpointed = busy == 0  # a reader's snapshot holds the log
        finally:
            rival.close()

    def __enter__(self):
        CommitBetweenTheCopies.active = self
        return self

    def __exit__(self, *exc):
        CommitBetweenTheCopies.active = None


sys.addaudithook(CommitBetweenTheCopies.audit)


def test_a_copy_of_the_files_is_taken_in_one_moment(preview, db, tmp_path):
    """The approval and an earlier payment (another key, another order) are
    committed but still in the log: another process holds the file open. Then
    a payment under k1 and a new policy commit together while the preview
    reads the file. Its answer must be the file's before (``would_commit``)
    or after (``already_committed``): a main file and a log copied a commit
    apart say ``refused: not_approved`` (main file first) or
    ``refused: policy_changed`` (log first), a state the file was never in."""
    path = tmp_path / "held.db"
    payments.install(path)
    with opened(path) as held:
        held.execute("SELECT count(*) FROM payments").fetchall()  # holds it open
        payments.approve(path, ORDER, AMOUNT, CURRENCY)  # in the log, not the file
        with opened(path) as conn, immediate(conn):
            conn.execute("INSERT INTO payments (key, order_id, amount_cents, currency)"
                         " VALUES ('k9', 'PO-3002', 5000, 'USD')")
        copy = service_says_of_a_copy(path)
        assert copy == "would_commit", (
            "the grader's world, not your answer: the service was to answer"
            f" 'would_commit' before the rival's commit, and answered {copy!r}")
        change = ("INSERT INTO payments (key, order_id, amount_cents, currency)"
                  " VALUES ('k1', 'PO-3001', 4000, 'USD');"
                  "INSERT INTO service_policy (id, version) VALUES (1, 2)"
                  " ON CONFLICT (id) DO UPDATE SET version = 2;")
        with CommitBetweenTheCopies(path, change) as watch:
            said = preview.unwatched(path, "k1", ORDER, AMOUNT, CURRENCY)
    assert watch.committed is not None, f"the rival's commit failed: {watch.fault!r}"
    if not watch.committed:  # no rival turn (no copy, or a write lock held)
        assert said == "would_commit", (
            f"the file did not change, and the preview said {said!r} where the"
            " service says 'would_commit'")
    else:
        assert said in ("would_commit", "already_committed"), (
            f"the file said 'would_commit' before the rival's commit and"
            f" 'already_committed' after it; the preview said {said!r}: its"
            " copy took the main file and its log a commit apart")
    expected = "already_committed" if watch.committed else "would_commit"
    real = service_says(path, "k1")
    assert real == expected, (
        "the grader's world, not your answer: after the rival's turn the"
        f" service was to answer {expected!r}, and answered {real!r}")


@st.composite
def worlds(draw):
    """A service file's state and a request; half the requests ask for exactly
    what the approval grants (the case where every term decides)."""
    world = draw(st.fixed_dictionaries({
        "approval": st.one_of(st.none(), st.fixed_dictionaries({
            "amount": st.sampled_from([3000, AMOUNT, 5000]),
            "currency": st.sampled_from(["USD", "EUR"]),
            "revoked": st.booleans(),
            "expires_in": st.sampled_from([None, -3600.0, 3600.0]),
            "granted_under": st.sampled_from([1, 2, 3]),
        })),
        "policy": st.sampled_from([1, 2, 3]),
        "history": st.one_of(st.none(), st.tuples(
            st.sampled_from([ORDER, "PO-3002"]), st.sampled_from([AMOUNT, 5000]),
            st.sampled_from(["USD", "EUR"]))),  # a payment made earlier under "k1"
        "asked": st.tuples(st.sampled_from(["k1", "k2"]),
                           st.sampled_from([ORDER, "PO-3002"]),
                           st.sampled_from([3000, AMOUNT, 5000]),
                           st.sampled_from(["USD", "EUR"])),
    }))
    if (grant := world["approval"]) is not None and draw(st.booleans()):
        world["asked"] = (draw(st.sampled_from(["k1", "k2"])), ORDER,
                          grant["amount"], grant["currency"])
    return world


WORLDS = worlds()


def build(path, world):
    """A service file in the state ``world`` describes; its history written
    as rows (the payment was allowed under terms that may be gone since)."""
    payments.install(path)
    authority.set_policy_version(path, world["policy"])
    if (grant := world["approval"]) is not None:
        expires = None if grant["expires_in"] is None else (
            time.time() + grant["expires_in"])
        payments.approve(path, ORDER, grant["amount"], grant["currency"],
                         expires_unix=expires, policy_version=grant["granted_under"])
        if grant["revoked"]:
            payments.revoke(path, ORDER)
    if world["history"] is not None:
        order, amount, currency = world["history"]
        with opened(path) as conn, immediate(conn):
            conn.execute(
                "INSERT INTO payments (key, order_id, amount_cents, currency)"
                " VALUES ('k1', :order, :amount, :currency)",
                {"order": order, "amount": amount, "currency": currency})
            conn.execute(
                "INSERT INTO payment_evidence"
                " (key, policy_version, expires_unix, committed_unix)"
                " VALUES ('k1', 1, NULL, :now)", {"now": time.time()})


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(world=WORLDS)
def test_any_world_previews_what_the_service_answers(preview, tmp_path_factory,
                                                      world):
    """Approvals larger or smaller than the request, in either currency,
    revoked or not, expired an hour ago or an hour ahead, granted under
    either policy; a payment under k1 for this action or another; the preview
    must say what the service then says (expiries far from now: the two read
    the clock a moment apart)."""
    db = tmp_path_factory.mktemp("world") / "payments.db"
    build(db, world)
    previewed(preview, db, *world["asked"])
