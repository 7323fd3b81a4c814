"""The services are systems of record: they sync at every commit, and a
history that opens but is damaged is refused before anything trusts it.

Chapter 11 proves that the fsync belongs to the store whose rows say what
happened outside. These tests hold the runtime to it: every connection any
service opens to its own file is at ``synchronous=FULL``, and a store whose
pages or indexes SQLite finds broken is refused with one line, untouched.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import threading
from pathlib import Path

import pytest

from crashcourse import store
from crashcourse.effects import FencingToken
from crashcourse.lab.harness import Harness
from crashcourse.services import (
    broker,
    drive,
    mail,
    payments,
)
from crashcourse.services import (
    supplier as supplier_client,
)
from crashcourse.services.payments import authority, budget
from crashcourse.services.supplier import server as supplier_server
from crashcourse.services.supplier import store as supplier_store
from crashcourse.services.supplier.process import start_supplier
from crashcourse.store import StoreDamaged, StoreMissing

ORDER, AMOUNT, CURRENCY = "SUP-0042", 4000, "USD"
KEY = "restock-0042/1/pay_invoice/0123456789abcdef"
FULL = 2  # what PRAGMA synchronous answers for FULL


@pytest.fixture
def opened_levels(monkeypatch):
    """Every connection ``store.connect`` hands out, with its synchronous level."""
    seen: list[tuple[str, int]] = []
    real = store.connect

    def watching(path, **options):
        conn = real(path, **options)
        seen.append((str(path), conn.execute("PRAGMA synchronous").fetchone()[0]))
        return conn

    monkeypatch.setattr(store, "connect", watching)
    return seen


def every_service_call(folder: Path) -> dict[str, Path]:
    """Install each service and run every call it offers; their files."""
    files = {name: folder / f"{name}.sqlite"
             for name in ("payments", "mail", "drive", "broker")}
    broker.install(files["broker"])
    token = broker.issue(files["broker"], "assistant", "drive:rename mail:submit", 60)
    payments.install(files["payments"], max_actions=5, currency_caps={"USD": 9000})
    payments.approve(files["payments"], ORDER, AMOUNT, CURRENCY)
    authority.set_expiry(files["payments"], ORDER, None)
    authority.set_policy_version(files["payments"], 1)
    budget.set_budget(files["payments"], 5, {"USD": 9000})
    payments.issue_payment(files["payments"], KEY, ORDER, AMOUNT, CURRENCY)
    payments.issue_payment(files["payments"], KEY, ORDER, AMOUNT, CURRENCY)
    budget.budget_snapshot(files["payments"])
    authority.payment_history(files["payments"], KEY)
    payments.revoke(files["payments"], ORDER)
    payments.snapshot(files["payments"])
    mail.install(files["mail"], broker=files["broker"])
    mail.submit(files["mail"], "orders@supplier.example", "s", "b",
                {mail.KEY_HEADER: KEY}, credential=token)
    mail.tick(files["mail"])
    mail.probe_sent(files["mail"], KEY)
    mail.copies(files["mail"], KEY)
    mail.sent_folder(files["mail"])
    mail.duplicate_messages(files["mail"])
    mail.snapshot(files["mail"])
    drive.install(files["drive"], {"f001": "scan-001.pdf"}, broker=files["broker"])
    drive.rename_to(files["drive"], "f001", "invoice.pdf", credential=token)
    drive.probe_rename(files["drive"], "f001", "invoice.pdf")
    drive.probe_rename_by_name(files["drive"], "f001", "invoice.pdf")
    drive.names(files["drive"])
    drive.duplicate_requests(files["drive"])
    drive.snapshot(files["drive"])
    with pytest.raises(broker.CredentialRefused):
        drive.rename_to(files["drive"], "f001", "x.pdf", credential="forged")
    broker.verify(files["broker"], token, "mail:submit")
    broker.revoke(files["broker"], token, "owner")
    broker.grant(files["broker"], "assistant", "owner")
    broker.revoke_holder(files["broker"], "assistant", "owner")
    broker.snapshot(files["broker"])
    return files


def test_every_service_opens_its_own_file_at_full(tmp_path, opened_levels):
    files = every_service_call(tmp_path)
    for name, path in files.items():
        levels = {level for where, level in opened_levels if where == str(path)}
        assert levels == {FULL}, f"{name} opened at synchronous levels {levels}"


def test_the_supplier_opens_its_file_at_full(tmp_path, opened_levels, monkeypatch):
    db = tmp_path / "supplier.sqlite"
    config = supplier_server.parse(["--db", str(db), "--ready",
                                    str(tmp_path / "ready")])
    supplier_store.install(db)
    monkeypatch.setattr(supplier_server.Handler, "config", config, raising=False)
    server = supplier_server.Server(("127.0.0.1", 0), supplier_server.Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        proposal = {"sku": "flour-25kg", "quantity": 6, "unit_cents": 2150}
        status, _ = supplier_client.place_order(url, "op-1", proposal,
                                                token=FencingToken("w", 1), wait_s=5)
        assert status == 201
        assert supplier_client.get_order(url, "op-1", wait_s=5)[0] == 200
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
    levels = {level for where, level in opened_levels if where == str(db)}
    assert levels == {FULL}


def test_a_worker_may_keep_its_own_file_at_normal(tmp_path):
    with store.opened(tmp_path / "own.sqlite") as conn:
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def zero_the_key_in_its_index(path: Path, key: str,
                              index: str = "sqlite_autoindex_payments_1") -> None:
    """Zero the bytes of ``key`` where the payments key's INDEX holds them
    (or another table's ``index``).

    The file still opens and ``quick_check`` still says ok; the lookup by
    key (which goes through that index) now finds nothing."""
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name ="
                            " :index", {"index": index}).fetchone()[0]
        size = conn.execute("PRAGMA page_size").fetchone()[0]
    data = bytearray(path.read_bytes())
    page = data[(root - 1) * size: root * size]
    at = page.find(key.encode())
    assert at >= 0, "the key is not on the index's root page"
    start = (root - 1) * size + at
    data[start: start + len(key)] = bytes(len(key))
    path.write_bytes(bytes(data))


def payments_without_the_index(path: Path) -> int:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        return conn.execute("SELECT count(*) FROM payments NOT INDEXED").fetchone()[0]


@pytest.fixture
def damaged_payments(tmp_path) -> Path:
    path = tmp_path / "payments.sqlite"
    payments.install(path)
    payments.approve(path, ORDER, AMOUNT, CURRENCY)
    assert payments.issue_payment(path, KEY, ORDER, AMOUNT, CURRENCY) == "committed"
    zero_the_key_in_its_index(path, KEY)
    with sqlite3.connect(path) as conn:  # what a store's own quick look misses
        assert conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"
        assert conn.execute("SELECT count(*) FROM payments WHERE key = ?",
                            (KEY,)).fetchone()[0] == 0
    return path


def test_a_history_whose_index_lost_a_key_is_refused_untouched(damaged_payments):
    before = sha(damaged_payments)
    with pytest.raises(StoreDamaged, match="damaged"):
        payments.issue_payment(damaged_payments, KEY, ORDER, AMOUNT, CURRENCY)
    for call in (payments.snapshot, lambda p: payments.approve(p, "o2", 1, "USD"),
                 budget.budget_snapshot,
                 lambda p: authority.payment_history(p, KEY)):
        with pytest.raises(StoreDamaged):
            call(damaged_payments)
    assert sha(damaged_payments) == before
    assert payments_without_the_index(damaged_payments) == 1


def test_the_reproduction_a_worker_with_no_checkpoint_charges_nothing_twice(
        damaged_payments, tmp_path):
    """The issue's reproduction: key bytes zeroed, the worker's checkpoint
    gone. Trusted, the file would let ``pay_invoice`` charge again and exit 0."""
    command = ["-m", "crashcourse.workers.pay_invoice", "--payments",
               str(damaged_payments), "--state", str(tmp_path / "worker.db"),
               "--task", "restock-0042", "--order", ORDER, "--amount",
               str(AMOUNT), "--currency", CURRENCY]
    with Harness() as harness:
        done = harness.run(command)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1
    assert "damaged" in done.stderr
    assert payments_without_the_index(damaged_payments) == 1
    assert not (tmp_path / "worker.db").exists()


@pytest.mark.parametrize("service", ["mail", "drive", "broker"])
def test_every_service_refuses_a_damaged_file(tmp_path, service):
    path = tmp_path / f"{service}.sqlite"
    module = {"mail": mail, "drive": drive, "broker": broker}[service]
    module.install(path)
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        size = conn.execute("PRAGMA page_size").fetchone()[0]
    data = bytearray(path.read_bytes())
    for page in range(1, pages):  # every page after the first: b-tree garbage
        data[page * size: page * size + 16] = b"\xff" * 16
    path.write_bytes(bytes(data))
    before = sha(path)
    read = {"mail": lambda p: mail.messages(p), "drive": lambda p: drive.names(p),
            "broker": lambda p: broker.snapshot(p)}[service]
    with pytest.raises(StoreMissing):
        read(path)
    assert sha(path) == before


def test_a_file_cut_short_inside_its_pages_is_refused(tmp_path):
    path = tmp_path / "payments.sqlite"
    payments.install(path)
    for i in range(80):
        payments.approve(path, f"order-{i}", AMOUNT, CURRENCY)
        payments.issue_payment(path, f"pay-{i}-0123456789abcdef", f"order-{i}",
                               AMOUNT, CURRENCY)
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    size = path.stat().st_size
    cut = tmp_path / "cut.sqlite"
    shutil.copy(path, cut)
    with open(cut, "r+b") as handle:
        handle.truncate(size // 2 + 100)  # mid-page, half the history gone
    with pytest.raises(StoreDamaged):
        payments.issue_payment(cut, "pay-3-0123456789abcdef", "order-3", AMOUNT,
                               CURRENCY)


def test_record_takes_a_bool_only(tmp_path):
    with pytest.raises(TypeError):
        store.connect(tmp_path / "x.sqlite", record="yes")


def test_the_supplier_process_refuses_a_damaged_store_with_503(tmp_path):
    """A damaged supplier file is answered like a missing one: 503, not trusted."""
    db = tmp_path / "supplier.sqlite"
    supplier_store.install(db)
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        size = conn.execute("PRAGMA page_size").fetchone()[0]
    with Harness() as harness:
        running = start_supplier(harness, db)
        data = bytearray(db.read_bytes())
        for page in range(1, pages):
            data[page * size: page * size + 16] = b"\xff" * 16
        db.write_bytes(bytes(data))
        with pytest.raises(supplier_client.NotDecided) as undecided:
            supplier_client.get_order(running.url, "op-1", wait_s=5)
    assert "(503)" in str(undecided.value)  # an answer, not a dropped connection
    assert "damaged" in str(undecided.value)


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


# --- no silent loss (issue 14): a store that vanished is refused, never
# replaced. Services are called by path; each call that is not ``install``
# opens an INSTALLED store or raises ``StoreMissing`` and leaves the file as
# it found it (was tests/test_no_silent_loss.py)


# the payment worker's own key for its task (restock-0042, step 1)
WORKER_KEY = "restock-0042/1/pay_invoice"


# Every call of every service that is not its install, on a file at ``p``.
CALLS = {
    "payments.approve": lambda p: payments.approve(p, ORDER, AMOUNT, CURRENCY),
    "payments.revoke": lambda p: payments.revoke(p, ORDER),
    "payments.issue_payment": lambda p: payments.issue_payment(
        p, WORKER_KEY, ORDER, AMOUNT, CURRENCY),
    "payments.snapshot": payments.snapshot,
    "mail.submit": lambda p: mail.submit(p, "owner@shop.example", "s", "b", {}),
    "mail.tick": mail.tick,
    "mail.probe_sent": lambda p: mail.probe_sent(p, "restock/42/send_mail/x"),
    "mail.sent_folder": mail.sent_folder,
    "mail.messages": mail.messages,
    "mail.duplicate_messages": mail.duplicate_messages,
    "mail.snapshot": mail.snapshot,
    "drive.lookup": lambda p: drive.lookup(p, "f001"),
    "drive.rename_to": lambda p: drive.rename_to(p, "f001", "invoice.pdf"),
    "drive.probe_rename": lambda p: drive.probe_rename(p, "f001", "invoice.pdf"),
    "drive.probe_rename_by_name": lambda p: drive.probe_rename_by_name(
        p, "f001", "invoice.pdf"),
    "drive.names": drive.names,
    "drive.duplicate_requests": drive.duplicate_requests,
    "drive.snapshot": drive.snapshot,
    "broker.issue": lambda p: broker.issue(p, "assistant", "mail:submit", 60),
    "broker.revoke": lambda p: broker.revoke(p, "cred-0", "owner"),
    "broker.verify": lambda p: broker.verify(p, "cred-0", "mail:submit"),
    "broker.snapshot": broker.snapshot,
    "broker.note_refusal": lambda p: broker.note_refusal(p, "submit", None, "missing"),
}


def not_a_store(path: Path, kind: str) -> None:
    """Leave at ``path`` what a lost or wrong store looks like."""
    if kind == "empty":  # truncated to 0 bytes
        path.write_bytes(b"")
    elif kind == "not_a_database":
        path.write_bytes(b"invoice scans, not SQLite\n" * 200)
    elif kind == "not_installed":  # a real SQLite file of something else
        with sqlite3.connect(path) as other:
            other.execute("CREATE TABLE notes (body TEXT)")
        other.close()


def files_in(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.mark.parametrize("kind", ["missing", "empty", "not_a_database",
                                  "not_installed"])
@pytest.mark.parametrize("call", sorted(CALLS))
def test_every_service_call_refuses_a_store_that_is_not_there(tmp_path, call, kind):
    path = tmp_path / "service.sqlite"
    not_a_store(path, kind)
    before = files_in(tmp_path)
    with pytest.raises(StoreMissing):
        CALLS[call](path)
    assert files_in(tmp_path) == before  # nothing created, nothing written


@pytest.fixture
def paid_history(tmp_path) -> Path:
    """A payment service with one committed payment, then truncated to 0 bytes."""
    path = tmp_path / "payments.sqlite"
    payments.install(path)
    payments.approve(path, ORDER, AMOUNT, CURRENCY)
    paid = payments.issue_payment(path, WORKER_KEY, ORDER, AMOUNT, CURRENCY)
    assert paid == "committed"
    assert len(payments.snapshot(path)["payments"]) == 1
    os.truncate(path, 0)  # closed cleanly: no -wal is left to replay either
    assert sorted(p.name for p in tmp_path.iterdir()) == ["payments.sqlite"]
    return path


def test_a_truncated_payment_history_is_refused_not_read_as_never_paid(paid_history):
    for attempt in ("replay", "new key"):
        key = WORKER_KEY if attempt == "replay" else WORKER_KEY + "#2"
        with pytest.raises(StoreMissing, match="0 bytes"):
            payments.issue_payment(paid_history, key, ORDER, AMOUNT, CURRENCY)
    assert paid_history.stat().st_size == 0


def test_the_payment_worker_never_answers_from_an_empty_store(paid_history, tmp_path):
    state = tmp_path / "worker.sqlite"
    with Harness() as harness:
        done = harness.run(["-m", "crashcourse.workers.pay_invoice",
                            "--payments", str(paid_history), "--state", str(state),
                            "--task", "restock-0042", "--order", ORDER,
                            "--amount", str(AMOUNT), "--currency", CURRENCY])
    # not paid (0), not "refused: not approved" (3): the store is not there
    assert done.returncode not in (0, 3), done.stdout
    assert "refused" not in done.stdout and "committed" not in done.stdout
    assert paid_history.stat().st_size == 0
    assert not Path(f"{paid_history}-wal").exists()


def test_a_guarded_service_refuses_when_its_broker_was_truncated(tmp_path):
    broker_path, mail_path = tmp_path / "broker.sqlite", tmp_path / "mail.sqlite"
    broker.install(broker_path)
    token = broker.issue(broker_path, "assistant", "mail:submit", 60)
    mail.install(mail_path, broker=broker_path)
    os.truncate(broker_path, 0)
    with pytest.raises(StoreMissing):
        mail.submit(mail_path, "owner@shop.example", "s", "b", {},
                    credential=token)
    assert mail.messages(mail_path) == []
    assert broker_path.stat().st_size == 0
    with pytest.raises(ValueError, match="no broker"):  # nor guards a new one
        drive.install(tmp_path / "drive.sqlite", broker=broker_path)
    assert broker_path.stat().st_size == 0


def test_a_service_is_never_guarded_by_a_broker_whose_index_lost_a_token(
        tmp_path):
    """Bug: ``broker.guard`` looks at the broker with ``record=False`` (the
    quick check): a broker whose token index lost a key would be trusted to
    refuse or accept every credential of the service it guards."""
    path = tmp_path / "broker.sqlite"
    broker.install(path)
    token = broker.issue(path, "assistant", "mail:submit", 60)
    zero_the_key_in_its_index(path, token, "sqlite_autoindex_credentials_1")
    before = sha(path)
    with pytest.raises(ValueError, match="no broker installed.*damaged"):
        mail.install(tmp_path / "mail.sqlite", broker=path)
    assert sha(path) == before


def test_a_guarded_write_refuses_a_broker_whose_index_lost_a_revocation(
        tmp_path):
    """Bug: ``broker._attach`` checks the attached broker with the quick check
    (``record=False``): a revocation whose token the index lost is not found
    by the join, and the revoked credential is accepted again."""
    broker_path, mail_path = tmp_path / "broker.sqlite", tmp_path / "mail.sqlite"
    broker.install(broker_path)
    token = broker.issue(broker_path, "assistant", "mail:submit", 60)
    mail.install(mail_path, broker=broker_path)
    broker.revoke(broker_path, token, "owner")
    zero_the_key_in_its_index(broker_path, token, "sqlite_autoindex_revocations_1")
    before = sha(broker_path)
    with pytest.raises(StoreDamaged):
        mail.submit(mail_path, "owner@shop.example", "s", "b", {},
                    credential=token)
    assert mail.messages(mail_path) == []
    assert sha(broker_path) == before


def test_a_guarded_service_refuses_when_its_broker_was_deleted(tmp_path):
    """Bug: ``_attach`` checks ``not isfile and size == 0``: a deleted broker
    is then an ``OSError`` from the size check, not the store's refusal."""
    broker_path, mail_path = tmp_path / "broker.sqlite", tmp_path / "mail.sqlite"
    broker.install(broker_path)
    token = broker.issue(broker_path, "assistant", "mail:submit", 60)
    mail.install(mail_path, broker=broker_path)
    for path in tmp_path.glob("broker.sqlite*"):
        path.unlink()
    with pytest.raises(StoreMissing, match="no broker here"):
        mail.submit(mail_path, "owner@shop.example", "s", "b", {},
                    credential=token)
    assert mail.messages(mail_path) == []
    assert not broker_path.exists()


def test_a_guarded_service_refuses_a_broker_file_that_is_not_a_broker(tmp_path):
    """Bug: ``_attach`` without its look for the broker's tables: a file put
    where the broker was (a database, not a broker) fails inside the query,
    not as the store's refusal."""
    broker_path, mail_path = tmp_path / "broker.sqlite", tmp_path / "mail.sqlite"
    broker.install(broker_path)
    token = broker.issue(broker_path, "assistant", "mail:submit", 60)
    mail.install(mail_path, broker=broker_path)
    for path in tmp_path.glob("broker.sqlite*"):
        path.unlink()
    with sqlite3.connect(broker_path) as other:
        other.execute("CREATE TABLE credentials (token TEXT)")  # one of two
    with pytest.raises(StoreMissing, match="not an installed broker"):
        mail.submit(mail_path, "owner@shop.example", "s", "b", {},
                    credential=token)
    assert mail.messages(mail_path) == []
