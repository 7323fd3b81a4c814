"""The account's total kept in the worker's memory (one entry per database file),
checked and raised inside the fenced transaction; the rows written but never summed.
Caught by ``test_two_processes_cannot_both_get_through``."""


def reserved_total(conn, claim):
    account = conn.execute("PRAGMA database_list").fetchone()[2]
    return reserved_total.memory.get(account, 0)  # this process's memory


reserved_total.memory = {}


def record(conn, claim, operation_key, amount_cents, _row=record):  # noqa: F821
    account = conn.execute("PRAGMA database_list").fetchone()[2]
    memory = reserved_total.memory
    memory[account] = memory.get(account, 0) + amount_cents
    _row(conn, claim, operation_key, amount_cents)
