"""One transaction, begun with a plain ``BEGIN``, which takes no lock until the first
write. Caught by ``test_a_rival_at_any_statement_cannot_get_both_through``."""


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
