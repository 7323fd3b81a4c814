"""Every worker's command line, given bad input, as a careless caller would
(issue 14): one line on stderr, no traceback, exit status 2
(``options.BAD_INPUT``), and nothing created or written.

Each case is a real child process. "Nothing created" is read from the folder
itself, before and after (every file and its size: a store a worker opened
and wrote would grow or gain a file), and "nothing written" from the rows of
the stores the worker was pointed at."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

from crashcourse import claims, journal
from crashcourse.claims import orders
from crashcourse.lab.example import scan_files
from crashcourse.services import drive, mail, payments
from crashcourse.store import count_rows, opened
from crashcourse.workers import (
    charge,
    journal_worker,
    options,
    pay_invoice,
    restock_note,
    scheduler,
    shop_worker,
    wedged_worker,
    workflow_worker,
)

WORKERS = (pay_invoice, charge, restock_note, journal_worker, scheduler,
           wedged_worker, workflow_worker, shop_worker)


def files(folder: Path) -> dict[str, int]:
    """Every file under ``folder`` and its size."""
    return {str(p.relative_to(folder)): p.stat().st_size
            for p in sorted(folder.rglob("*")) if p.is_file()}


def refused(folder: Path, module: str, argv: list[str]) -> str:
    """Run the worker; assert one line, exit 2, no file created or grown."""
    before = files(folder)
    done = subprocess.run([sys.executable, "-m", f"crashcourse.workers.{module}",
                           *argv], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL, cwd=folder)
    lines = done.stderr.splitlines()
    assert done.returncode == options.BAD_INPUT, done.stderr
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith(f"{module}.py: error: "), lines[0]
    assert done.stdout == ""
    assert files(folder) == before  # nothing created, nothing grown
    return lines[0]


def with_option(argv: list[str], flag: str, value: str | None) -> list[str]:
    """``argv`` with ``flag`` set to ``value`` (added if absent, dropped if None)."""
    pairs = dict(zip(argv[::2], argv[1::2], strict=True))
    if value is None:
        pairs.pop(flag)
    else:
        pairs[flag] = value
    return [part for pair in pairs.items() for part in pair]


# (flag, bad value) for both payment workers; {tmp} is the test's folder.
PAYMENT_CASES = [
    ("--amount", "0"), ("--amount", "-1"), ("--amount", str(2**64)),
    ("--amount", "1.5"), ("--amount", "abc"), ("--amount", ""),
    ("--currency", "usd"), ("--currency", "US"), ("--currency", ""),
    ("--currency", "USDX"), ("--task", ""), ("--task", "   "), ("--order", ""),
    ("--order", " \t"), ("--busy-timeout-ms", "-5"),
    ("--busy-timeout-ms", str(2**64)), ("--state", "{tmp}/missing/worker.sqlite"),
    # ten minutes and a millisecond: over the workers' own cap, under SQLite's
    ("--busy-timeout-ms", "600001"),
    ("--state", "{tmp}"), ("--state", ""), ("--state", "{tmp}/payments.sqlite"),
    ("--payments", "{tmp}/absent.sqlite"),
    ("--payments", "{tmp}/empty.sqlite"), ("--payments", ""),
    # issue 23: amounts spelled in ways int() accepts and a person did not type
    ("--amount", "+4000"), ("--amount", "4_000"), ("--amount", " 4000"),
    ("--amount", "\u0664\u0660\u0660\u0660"),  # Arabic-Indic digits
    # bytes that are not UTF-8 (a Latin-1 terminal): Python hands them over as
    # lone surrogates, which no database can store
    ("--task", "t\udcff"), ("--order", "o\udced\udca0\udc80"),
    ("--state", "{tmp}/w\udcff.sqlite"),
    # a state that is not a file the worker could keep
    ("--state", "/dev/null"), ("--state", "/dev/full"), ("--state", "{tmp}/fifo"),
]


@pytest.fixture
def service(tmp_path):
    """An installed, approved payment service, a 0-byte file and a FIFO."""
    db = tmp_path / "payments.sqlite"
    payments.install(db)
    payments.approve(db, "SUP-1", 4000, "USD")
    (tmp_path / "empty.sqlite").touch()
    os.mkfifo(tmp_path / "fifo")
    return db


def payment_argv(tmp_path, db) -> list[str]:
    return ["--payments", str(db), "--state", str(tmp_path / "worker.sqlite"),
            "--task", "restock-1", "--order", "SUP-1", "--amount", "4000",
            "--currency", "USD"]


@pytest.mark.parametrize("worker, flag, value", [
    *(("pay_invoice", flag, value) for flag, value in PAYMENT_CASES),
    # charge runs the same check (payment_command.check): a sample, and its key
    *(("charge", flag, value) for flag, value in PAYMENT_CASES[::4]),
    ("charge", "--key", ""), ("charge", "--key", "  "), ("charge", "--key", None),
    ("pay_invoice", "--notify", "{tmp}/no-mail.sqlite"),
    ("pay_invoice", "--notify", ""),
])
def test_payment_workers_refuse_bad_input(tmp_path, service, worker, flag, value):
    argv = payment_argv(tmp_path, service) + (
        ["--key", "k-1"] if worker == "charge" else [])
    refused(tmp_path, worker, with_option(
        argv, flag, None if value is None else value.format(tmp=tmp_path)))
    assert payments.snapshot(service)["payments"] == []


@pytest.mark.parametrize("worker, extra", [("pay_invoice", []),
                                           ("charge", ["--key", "k-1"])])
def test_the_unchanged_payment_command_pays(tmp_path, service, worker, extra):
    # the command the bad cases change one option of: it does pay
    done = subprocess.run([sys.executable, "-m", f"crashcourse.workers.{worker}",
                           *payment_argv(tmp_path, service), *extra],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert len(payments.snapshot(service)["payments"]) == 1


RESTOCK_CASES = [
    ("--quantity", "+2"), ("--quantity", "1_0"), ("--db", "/dev/null"),
    ("--quantity", "0"), ("--quantity", "-1"), ("--quantity", str(2**63)),
    ("--quantity", str(2**64)), ("--quantity", "1.5"), ("--quantity", "abc"),
    ("--task", ""), ("--task", " "), ("--sku", ""), ("--sku", "\t"),
    ("--db", "{tmp}/missing/shop.sqlite"), ("--db", "{tmp}"), ("--db", ""),
    ("--mode", "twice"), ("--task", "t\udcff"), ("--sku", "\udcff"),
]


@pytest.mark.parametrize("flag, value", RESTOCK_CASES)
def test_restock_note_refuses_bad_input(tmp_path, flag, value):
    argv = ["--db", str(tmp_path / "shop.sqlite"), "--task", "t", "--sku",
            "oat-milk", "--quantity", "2"]
    refused(tmp_path, "restock_note", with_option(argv, flag,
                                                  value.format(tmp=tmp_path)))


def test_a_huge_quantity_is_refused_not_overflowed(tmp_path):
    line = refused(tmp_path, "restock_note", [
        "--db", str(tmp_path / "shop.sqlite"), "--task", "t", "--sku", "oat-milk",
        "--quantity", str(2**63)])
    assert "quantity" in line and "Overflow" not in line


@pytest.fixture
def journal_world(tmp_path):
    world = tmp_path / "world"
    world.mkdir()
    task = journal_worker.build_world(str(world))
    (tmp_path / "empty").mkdir()
    return world, task


def journal_rows(world: Path) -> tuple[int, int, int]:
    """Journal entries, rename requests at the drive, messages at the provider."""
    where = journal_worker.paths(str(world))
    found = []
    for name, table in (("journal", "journal"), ("drive", "rename_requests"),
                        ("mail", "messages")):
        with opened(where[name]) as conn:
            found.append(count_rows(conn, table))
    return tuple(found)


@pytest.mark.parametrize("flag, value", [
    ("--task", ""), ("--task", "  "), ("--task", "no-such-plan"),
    ("--probe", "guess"), ("--credential", " "), ("--resume-by", ""),
    ("--task", None), ("--bogus", "1"), ("--dir", "{tmp}/missing"),
    ("--dir", "{tmp}/empty"), ("--dir", "{tmp}/world/journal.sqlite"),
    # the wait must be above 0 and below the lease (3 s unless told): exactly
    # 0 and exactly 3 are the edges, refused before any claim is written
    ("--wait", "0"), ("--wait", "3"), ("--wait", "nan"),
    # a lease over chapter 05's cap of an hour, or none that ends
    ("--ttl", "3601"), ("--ttl", "inf"),
    ("--broker", "{tmp}/no-broker.sqlite"),  # not an installed broker
])
def test_journal_worker_refuses_bad_input(tmp_path, journal_world, flag, value):
    world, task = journal_world
    argv = with_option(["--dir", str(world), "--task", task], flag,
                       None if value is None else value.format(tmp=tmp_path))
    refused(tmp_path, "journal_worker", argv)
    assert journal_rows(world) == (0, 0, 0)


@pytest.mark.parametrize("given, refused", [
    ({"--credential": "c"}, False), ({"--broker": "b.sqlite"}, False),
    ({"--credential": "c", "--broker": "b.sqlite"}, True)])
def test_journal_worker_takes_a_credential_or_a_broker_not_both(tmp_path, given,
                                                                refused):
    """Bug: the rule "not both" read as "not either" (``or`` for ``and``):
    chapter 09's runs, each with its credential or its broker, refused."""
    argv = ["--dir", str(tmp_path), "--task", "t"]
    for flag, value in given.items():
        argv += [flag, value]
    if refused:
        with pytest.raises(ValueError, match="not both"):
            journal_worker.parse(argv)
    else:
        [(flag, value)] = given.items()
        assert journal_worker.parse(argv)[flag[2:]] == value


def test_journal_worker_s_resume_command_asks_the_broker_given_only(tmp_path):
    """Bug: ``resume_command`` adds ``--broker`` when there is none (``None``
    as the path) and leaves it out when there is one: the resumed run then
    holds no credential, or fails on a broker called "None" (chapter 09)."""
    plain = journal_worker.resume_command(tmp_path, "t", "owner")
    assert "--broker" not in plain and plain[-2:] == ["--resume-by", "owner"]
    asked = journal_worker.resume_command(tmp_path, "t", "owner", "b.sqlite")
    at = asked.index("--broker")
    assert asked[at + 1] == "b.sqlite"


def test_journal_worker_s_actions_refuse_a_probe_they_do_not_know(tmp_path):
    """Bug: ``restock_actions`` without its own check of ``probe``: a probe
    spelled wrong (here by a checkpoint, not the command line) silently
    gets the wrong, filename-only probe."""
    with pytest.raises(ValueError, match="probe must be one of"):
        journal_worker.restock_actions(str(tmp_path / "d"), str(tmp_path / "m"),
                                       probe="corect")


@pytest.mark.parametrize("gone", ["drive", "mail"])
def test_journal_worker_refuses_a_world_without_its_services(tmp_path,
                                                           journal_world, gone):
    """Bug: ``check_world`` checks the journal alone: with the drive's or the
    mail provider's file gone, the worker claims the task (its journal file
    grows) before it finds out, instead of refusing with nothing written."""
    world, task = journal_world
    (world / f"{gone}.sqlite").unlink()
    refused(tmp_path, "journal_worker", ["--dir", str(world), "--task", task])


def test_journal_worker_refuses_a_truncated_journal(tmp_path, journal_world):
    world, task = journal_world
    (world / "journal.sqlite").write_bytes(b"")  # the plan and journal are gone
    refused(tmp_path, "journal_worker", ["--dir", str(world), "--task", task])
    assert (world / "journal.sqlite").stat().st_size == 0


def test_journal_worker_refuses_an_odd_command_line(tmp_path, journal_world):
    world, task = journal_world
    refused(tmp_path, "journal_worker", ["--dir", str(world), "--task"])


@pytest.mark.parametrize("flag, value", [
    ("--name", ""), ("--name", "  "), ("--ticks", "0"), ("--ticks", "x"),
    ("--ticks", "1.5"), ("--ticks", str(2**64)), ("--interval", "nan"),
    ("--interval", "inf"), ("--interval", "-1"), ("--name", None),
    ("--state", "{tmp}/missing/runtime.sqlite"), ("--state", "{tmp}"),
    ("--state", ""), ("--bogus", "1"), ("--name", "n\udcff"),
    ("--ticks", "1_0"), ("--ticks", "+1"), ("--ticks", " 1"),
    ("--ticks", "\uff15"),  # a full-width 5: int() takes it
])
def test_scheduler_refuses_bad_input(tmp_path, flag, value):
    argv = ["--state", str(tmp_path / "runtime.sqlite"), "--name", "nightly",
            "--ticks", "1"]
    refused(tmp_path, "scheduler", with_option(
        argv, flag, None if value is None else value.format(tmp=tmp_path)))


@pytest.fixture
def wedged_world(tmp_path):
    drive.install(tmp_path / "drive.sqlite", scan_files(4))
    drive.install(tmp_path / "bare-drive.sqlite")
    mail.install(tmp_path / "mail.sqlite")
    return tmp_path


@pytest.mark.parametrize("flag, value", [
    ("--credential", ""), ("--credential", " "), ("--credential", None),
    ("--limit", "0"), ("--limit", "x"), ("--pace", "nan"), ("--pace", "2"),
    ("--drive", "{tmp}/absent.sqlite"), ("--mail", "{tmp}/absent.sqlite"),
    ("--drive", "{tmp}/bare-drive.sqlite"), ("--drive", ""),
    ("--limit", "1_0"), ("--limit", "+2"), ("--credential", "c\udcff"),
])
def test_wedged_worker_refuses_bad_input(wedged_world, flag, value):
    tmp = wedged_world
    argv = ["--drive", str(tmp / "drive.sqlite"), "--mail", str(tmp / "mail.sqlite"),
            "--credential", "token", "--limit", "2", "--pace", "0"]
    refused(tmp, "wedged_worker", with_option(
        argv, flag, None if value is None else value.format(tmp=tmp)))
    assert drive.names(tmp / "drive.sqlite") == scan_files(4)
    assert mail.messages(tmp / "mail.sqlite") == []


@pytest.fixture
def workflow_world(tmp_path):
    world = tmp_path / "world"
    world.mkdir()
    built = workflow_worker.build_world(str(world))
    (tmp_path / "empty").mkdir()
    return world, built["workflow_id"]


def workflow_history(world: Path) -> int:
    with opened(workflow_worker.paths(str(world))["workflow"]) as conn:
        return count_rows(conn, "workflow_history")


@pytest.mark.parametrize("flag, value", [
    ("--workflow", ""), ("--workflow", " "), ("--workflow", "no-such-workflow"),
    ("--who", " "), ("--url", ""), ("--mode", "optimistic"), ("--who", None),
    ("--dir", "{tmp}/missing"), ("--dir", "{tmp}/empty"), ("--dir", ""),
    ("--url", "not-a-url"), ("--url", "ftp://127.0.0.1:9"), ("--url", "http://"),
])
def test_workflow_worker_refuses_bad_input(tmp_path, workflow_world, flag, value):
    world, workflow_id = workflow_world
    history = workflow_history(world)
    argv = ["--dir", str(world), "--workflow", workflow_id, "--who", "worker-1",
            "--url", "http://127.0.0.1:9"]
    refused(tmp_path, "workflow_worker", with_option(
        argv, flag, None if value is None else value.format(tmp=tmp_path)))
    assert workflow_history(world) == history


@pytest.fixture
def agent(tmp_path):
    db = tmp_path / "agent.sqlite"
    with opened(db) as conn:
        orders.install(conn)
    with opened(tmp_path / "other-store.sqlite") as conn:
        journal.install(conn)  # a store, but not the agent's
    (tmp_path / "empty.sqlite").touch()
    return db


@pytest.mark.parametrize("mode, flag, value", [
    ("drain", "--owner", ""), ("drain", "--owner", "  "), ("drain", "--ttl", "0"),
    ("drain", "--ttl", "nan"), ("drain", "--ttl", "inf"), ("drain", "--ttl", "-1"),
    ("drain", "--ttl", "4000"), ("drain", "--ttl", "x"), ("drain", "--wait", "0"),
    ("drain", "--wait", "nan"), ("drain", "--work", ""), ("send", "--url", ""),
    ("run", "--url", " "), ("drain", "--db", "{tmp}/absent.sqlite"),
    ("drain", "--db", "{tmp}/missing/agent.sqlite"),
    ("drain", "--db", "{tmp}/empty.sqlite"),
    ("drain", "--db", "{tmp}/other-store.sqlite"), ("sweep", "--owner", "w"),
])
def test_shop_worker_refuses_bad_input(tmp_path, agent, mode, flag, value):
    argv = with_option(["--db", str(agent), "--owner", "w", "--url",
                        "http://127.0.0.1:9"], flag, value.format(tmp=tmp_path))
    refused(tmp_path, "shop_worker", [mode, *argv])
    with opened(agent) as conn:
        assert count_rows(conn, "claims") == count_rows(conn, "work") == 0


def run(folder: Path, module: str, argv: list[str]):
    return subprocess.run([sys.executable, "-m", f"crashcourse.workers.{module}",
                           *argv], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL, cwd=folder)


# The unchanged command of each table above is NOT refused: a bad case is
# refused for the one value it changes, not for a mistake in the table.
def test_the_unchanged_restock_and_scheduler_commands_run(tmp_path):
    note = run(tmp_path, "restock_note", ["--db", str(tmp_path / "shop.sqlite"),
                                          "--task", "t", "--sku", "oat-milk",
                                          "--quantity", "2"])
    tick = run(tmp_path, "scheduler", ["--state", str(tmp_path / "runtime.sqlite"),
                                       "--name", "nightly", "--ticks", "1"])
    assert (note.returncode, tick.returncode) == (0, 0), note.stderr + tick.stderr


def test_the_unchanged_journal_command_runs(tmp_path, journal_world):
    world, task = journal_world
    done = run(tmp_path, "journal_worker", ["--dir", str(world), "--task", task])
    assert done.returncode == 0, done.stderr
    assert journal_rows(world)[0] > 0


def test_the_unchanged_wedged_command_runs(wedged_world):
    tmp = wedged_world
    done = run(tmp, "wedged_worker", [
        "--drive", str(tmp / "drive.sqlite"), "--mail", str(tmp / "mail.sqlite"),
        "--credential", "token", "--limit", "2", "--pace", "0"])
    assert done.returncode == 0, done.stderr


def test_the_unchanged_workflow_and_shop_commands_are_not_refused(
        tmp_path, workflow_world, agent):
    world, workflow_id = workflow_world
    flow = run(tmp_path, "workflow_worker", [
        "--dir", str(world), "--workflow", workflow_id, "--who", "worker-1",
        "--url", "http://127.0.0.1:9"])  # no supplier there: not bad input
    drained = run(tmp_path, "shop_worker", ["drain", "--db", str(agent), "--owner",
                                            "w", "--url", "http://127.0.0.1:9"])
    assert flow.returncode != options.BAD_INPUT, flow.stderr
    assert drained.returncode == 0, drained.stderr


@pytest.mark.parametrize("worker", WORKERS, ids=lambda w: w.__name__)
def test_every_worker_documents_exit_status_2_for_bad_input(worker):
    doc = " ".join(worker.__doc__.split())
    assert re.search(r"\b2 \(?bad input|exit status 2\b", doc), worker.__name__


@pytest.mark.parametrize("worker", [pay_invoice, charge, restock_note, shop_worker],
                         ids=lambda w: w.__name__)
def test_help_states_the_exit_statuses(worker):
    done = subprocess.run([sys.executable, "-m", worker.__name__, "--help"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "2 bad input" in " ".join(done.stdout.split())


def test_shop_worker_with_nothing_to_claim_says_so_with_its_own_status(tmp_path,
                                                                       agent):
    # not bad input: the store is right and empty; 3, as documented, not 1
    done = run(tmp_path, "shop_worker", ["send", "--db", str(agent), "--owner", "w",
                                         "--url", "http://127.0.0.1:9"])
    assert done.returncode == shop_worker.NOTHING_TO_CLAIM == 3, done.stderr
    assert done.stderr.splitlines() == ["nothing to claim"]


# --- what the machine refuses: one line, never a traceback (issue 23) ---------


@contextmanager
def tiny_mount(folder: Path, size: str, *flags: str):
    """A tmpfs of ``size`` on ``folder`` for the block (root only; else skip),
    unmounted however the block ends."""
    folder.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", ",".join((f"size={size}",
                                                                   *flags)),
                           "tmpfs", str(folder)], capture_output=True)
    if made.returncode != 0:
        pytest.skip("mounting a tmpfs needs root")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


@pytest.fixture
def read_only(tmp_path):
    with tiny_mount(tmp_path / "ro", "1m", "ro") as folder:
        yield folder


@pytest.mark.parametrize("worker", ["pay_invoice", "charge"])
def test_a_state_on_a_read_only_mount_is_refused_up_front(tmp_path, service,
                                                           read_only, worker):
    argv = payment_argv(tmp_path, service) + (
        ["--key", "k-1"] if worker == "charge" else [])
    line = refused(tmp_path, worker, with_option(argv, "--state",
                                                 str(read_only / "worker.sqlite")))
    assert "cannot be written" in line
    assert payments.snapshot(service)["payments"] == []


@pytest.fixture
def full_disk(tmp_path):
    """A 256 KiB tmpfs with 200 KiB of it taken."""
    with tiny_mount(tmp_path / "full", "256k") as folder:
        (folder / "filler").write_bytes(b"x" * 200 * 1024)
        yield folder


def test_a_disk_that_fills_mid_run_ends_the_worker_in_one_line(tmp_path, full_disk):
    argv = ["--db", str(full_disk / "shop.sqlite"), "--task", "t", "--sku",
            "oat-milk", "--quantity", "2", "--text", "n" * 100_000]
    done = subprocess.run([sys.executable, "-m", "crashcourse.workers.restock_note",
                           *argv], capture_output=True, text=True, timeout=60)
    assert done.returncode == options.IO_ERROR, done.stderr
    assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr
    assert "full" in done.stderr


@pytest.mark.parametrize("worker", [pay_invoice, charge, restock_note,
                                    journal_worker, shop_worker],
                         ids=lambda w: w.__name__)
def test_the_machine_refusal_status_is_documented(worker):
    assert "74" in worker.__doc__


@pytest.mark.parametrize("worker", WORKERS, ids=lambda w: w.__name__)
def test_every_worker_answers_help_with_its_usage_and_exit_0(worker, tmp_path):
    module = worker.__name__.rsplit(".", 1)[1]
    done = subprocess.run([sys.executable, "-m", worker.__name__, "--help"],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert "python -m crashcourse.workers." + module in done.stdout or \
        "usage:" in done.stdout
    assert list(tmp_path.iterdir()) == []  # help writes nothing


def test_a_send_whose_wait_outlives_its_lease_is_refused_before_any_claim(
        tmp_path, agent):
    """Issue 23: ``send --wait 2`` with the default 1 s lease wrote its claim,
    then died on LeaseTooShort with a traceback."""
    with opened(agent) as conn:
        claims.enqueue(conn, "ticket-7", "session-7", "Restock flour")
    refused(tmp_path, "shop_worker", ["send", "--db", str(agent), "--url",
                                      "http://127.0.0.1:9", "--wait", "2"])
    with opened(agent) as conn:
        assert count_rows(conn, "claims") == 0
        assert claims.work_row(conn, claims.work_id_for("ticket-7"))[
            "generation"] == 0


def test_a_refusal_of_the_runtime_is_not_reported_as_the_machine(monkeypatch):
    """``StaleClaim`` and its kin are ``PermissionError``s, hence ``OSError``s:
    ``one_line_errors`` must not call them a full disk."""
    from crashcourse.claims import Claim
    from crashcourse.claims.fence import StaleClaim

    stale = Claim("w", "s", "p", "", "shop", "o", 1, 0.0, "epoch-1")

    def main(argv=None):
        raise StaleClaim("superseded", stale)

    with pytest.raises(StaleClaim):
        options.one_line_errors(main)([])

    def full(argv=None):
        raise OSError(28, "No space left on device")

    assert options.one_line_errors(full)([]) == options.IO_ERROR


def test_a_workflow_worker_whose_supplier_is_down_says_so_in_one_line(
        tmp_path, workflow_world):
    """Issue 23: it wrote the reserve attempt, then died on a URLError
    traceback. Now: one line, its own exit status, and the attempt left in
    doubt for the next worker's probe (read from the workflow's rows)."""
    world, workflow_id = workflow_world
    done = subprocess.run(
        [sys.executable, "-m", "crashcourse.workers.workflow_worker", "--dir",
         str(world), "--workflow", workflow_id, "--who", "w1", "--url",
         "http://127.0.0.1:9"], capture_output=True, text=True, timeout=120)
    assert done.returncode == workflow_worker.EXIT["unreachable"], done.stderr
    assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr
    assert "did not answer" in done.stderr
    with opened(workflow_worker.paths(str(world))["workflow"]) as conn:
        from crashcourse.workflow import steps

        reserve = steps.step_of(conn, workflow_id, "reserve")
    assert reserve["status"] == steps.IN_DOUBT
