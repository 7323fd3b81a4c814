"""One transaction, begun with a plain ``BEGIN``, which takes no lock until the first
write. Caught by ``test_a_rival_at_any_statement_cannot_get_both_through``."""

import contextlib


@contextlib.contextmanager
def guarded(conn, claim):
    conn.execute("BEGIN")  # the lock comes with the first write
    with conn:  # COMMIT at the end, ROLLBACK on an error
        fence.assert_current(conn, claim)
        yield
