"""The key looked up first and claimed only if missing, after a plain (deferred)
``BEGIN`` that takes no lock at the read. Caught by
``test_a_rival_between_any_two_statements_is_answered_not_a_crash``."""


def transaction(conn):
    import contextlib

    @contextlib.contextmanager
    def deferred():
        conn.execute("BEGIN")  # deferred: no lock until the first write
        try:
            yield
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    return deferred()


def claim(conn, key, offered):
    if conn.execute("SELECT 1 FROM requests WHERE key = :key",
                    {"key": key}).fetchone():
        return False
    conn.execute("INSERT INTO requests (key, payload) VALUES (:key, :payload)",
                 {"key": key, "payload": offered})
    return True
