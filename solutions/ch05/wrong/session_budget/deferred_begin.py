"""WRONG ANSWER to exercise 05.2: one transaction, begun with a plain
``BEGIN``, which takes no lock until the first write. With the other
session's reservation committed between this one's sum and its insert, the
INSERT fails with "database is locked" and the worker crashes instead of
answering. Caught by ``test_a_rival_at_any_statement_cannot_get_both_through``.
"""


def guarded(conn, claim):
    import contextlib

    @contextlib.contextmanager
    def deferred():
        conn.execute("BEGIN")  # the lock comes with the first write
        try:
            fence.assert_current(conn, claim)
            yield
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    return deferred()
