"""The key looked up first and claimed only if missing, after a plain (deferred)
``BEGIN`` that takes no lock at the read. Caught by
``test_a_rival_between_any_two_statements_is_answered_not_a_crash``."""

import contextlib


@contextlib.contextmanager
def transaction(conn):
    conn.execute("BEGIN")  # deferred: no lock until the first write
    with conn:  # COMMIT at the end, ROLLBACK on an error
        yield


def claim(conn, key, offered):
    if conn.execute("SELECT 1 FROM requests WHERE key = :key",
                    {"key": key}).fetchone():
        return False
    conn.execute("INSERT INTO requests (key, payload) VALUES (:key, :payload)",
                 {"key": key, "payload": offered})
    return True
