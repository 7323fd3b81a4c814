"""The move in a plain (deferred) ``BEGIN``, and SQLite's "database is locked" reported
as ``stale_version``. Caught by
``test_another_delivery_moving_in_between_is_no_reason_to_refuse`` and
``test_a_busy_database_is_not_a_stale_version``."""

import contextlib


@contextlib.contextmanager
def transaction(conn):
    conn.execute("BEGIN")  # deferred: the write lock comes with the UPDATE
    with conn:  # COMMIT at the end, ROLLBACK on an error
        yield


def compare_and_set(conn, delivery_id, expected_state, expected_version, to_state,
                    _reference=compare_and_set):  # noqa: F821
    try:
        return _reference(conn, delivery_id, expected_state, expected_version,
                          to_state)
    except sqlite3.OperationalError as locked:
        if "locked" not in str(locked):
            raise
        return None  # someone wrote since the read: taken for a newer version
