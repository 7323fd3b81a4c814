"""The move in a plain (deferred) ``BEGIN``, and SQLite's "database is locked" reported
as ``stale_version``. Caught by
``test_another_delivery_moving_in_between_is_no_reason_to_refuse`` and
``test_a_busy_database_is_not_a_stale_version``."""


def transaction(conn):
    import contextlib

    @contextlib.contextmanager
    def deferred():
        conn.execute("BEGIN")  # deferred: the write lock comes with the UPDATE
        try:
            yield
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    return deferred()


def compare_and_set(conn, delivery_id, expected_state, expected_version, to_state,
                    _reference=compare_and_set):  # noqa: F821
    try:
        return _reference(conn, delivery_id, expected_state, expected_version,
                          to_state)
    except sqlite3.OperationalError as locked:
        if "locked" not in str(locked):
            raise
        return None  # someone wrote since the read: taken for a newer version
