"""``room_for`` ends the caller's ``BEGIN IMMEDIATE`` (a ``commit`` to "start clean"),
counts the round outside any lock and opens a plain ``BEGIN`` again so the caller's
commit still works: another writer can pay between this count and the caller's insert.
Caught by ``test_the_callers_transaction_and_lock_survive``."""


def room_for(conn, amount_cents, currency, round_start, _reference=room_for):  # noqa: F821
    conn.commit()  # "start from a clean transaction": drops the write lock
    said = _reference(conn, amount_cents, currency, round_start)
    conn.execute("BEGIN")  # so the caller's COMMIT still finds a transaction
    return said
