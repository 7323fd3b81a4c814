"""WRONG ANSWER to exercise 08.1 (chapter 08): deferred, and "locked" read as "stale".

The mistake: the move runs in a plain ``BEGIN`` (deferred: no lock until the
first write), and when SQLite refuses the write with "database is locked"
the answer reports ``stale_version``. Against the clerk it looks right: the
clerk committed a move since this transaction's read, SQLite will not let a
write land on an out-of-date snapshot, and the version did move. But
"locked" says only that the write lock could not be had: a commit to ANOTHER
delivery since the read, or a writer holding the lock past the busy
timeout, gets the same error while this caller's view is perfectly current.
It is told to read again, reads the same version, and the truth ("not done,
the database was busy") is lost. Caught by
``test_another_delivery_moving_in_between_is_no_reason_to_refuse`` and
``test_a_busy_database_is_not_a_stale_version``.
"""


def transition(conn: sqlite3.Connection, delivery_id: str, *, expected_state: str,
               expected_version: int, to_state: str, who: str) -> int:
    """The reference's moves, in a deferred transaction."""
    for name, state in (("expected_state", expected_state), ("to_state", to_state)):
        if state not in STATES:
            raise ValueError(f"{name} must be one of {STATES}, got {state!r}")
    check_count("expected_version", expected_version)
    check_text("who", who)
    conn.execute("BEGIN")  # deferred: the write lock comes with the UPDATE
    try:
        found = read(conn, delivery_id)
        current = {"state": found["state"], "version": found["version"]}
        if (expected_state, to_state) not in MOVES:
            raise TransitionRefused(ILLEGAL_MOVE, current)
        try:
            moved = conn.execute(
                "UPDATE deliveries SET state = :to_state, version = version + 1"
                " WHERE id = :id AND state = :expected_state"
                "   AND version = :expected_version",
                {"id": delivery_id, "to_state": to_state,
                 "expected_state": expected_state,
                 "expected_version": expected_version}).rowcount
        except sqlite3.OperationalError as locked:
            if "locked" not in str(locked):
                raise
            moved = 0  # someone wrote since the read: taken for a newer version
        if moved != 1:
            raise TransitionRefused(STALE_VERSION, current)
        waiting = conn.execute(
            "SELECT 1 FROM cancel_requests WHERE delivery_id = :id",
            {"id": delivery_id}).fetchone()
        if waiting and (expected_state, to_state) in FORWARD:
            raise TransitionRefused(CANCEL_REQUESTED, current)
        conn.execute(
            "INSERT INTO delivery_history (delivery_id, version, from_state,"
            " to_state, who, at) VALUES (:id, :version, :from_state, :to_state,"
            " :who, :at)",
            {"id": delivery_id, "version": expected_version + 1,
             "from_state": expected_state, "to_state": to_state, "who": who,
             "at": clock()})
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return expected_version + 1
