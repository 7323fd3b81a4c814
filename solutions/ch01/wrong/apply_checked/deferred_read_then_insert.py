"""WRONG ANSWER to exercise 01.1 (chapter 01): read, then insert, after a plain
BEGIN.

The mistake: the key is looked up first and claimed only if missing, inside
a deferred ``BEGIN``, which takes no lock at the read. In one connection it
is right in every case; with another process applying the same key between
the read and the insert, the insert finds its snapshot out of date and
SQLite raises ``database is locked`` (an ``OperationalError`` no busy timeout
helps with): the worker crashes instead of answering with the rival's
result. Caught by
``test_a_rival_between_any_two_statements_is_answered_not_a_crash`` (rival
after statement 2).
"""


def apply_checked(
    conn: sqlite3.Connection,
    key: str,
    payload: Any,
    mutate: Callable[[sqlite3.Connection], Any],
) -> tuple[str, Any]:
    """Commit ``mutate(conn)``'s writes at most once per ``key``; keep its answer."""
    check_text("operation key", key)
    offered = canonical(payload)
    refusal = None
    conn.execute("BEGIN")  # deferred: no lock until the first write
    try:
        row = conn.execute(
            "SELECT payload, result, refusal FROM requests WHERE key = :key",
            {"key": key},
        ).fetchone()
        if row is not None:
            conn.execute("ROLLBACK")
            if row["payload"] != offered:
                raise EffectConflict(key, json.loads(row["payload"]), payload)
            if row["refusal"] is not None:
                raise Refused(row["refusal"])
            return "already_applied", json.loads(row["result"])
        conn.execute("INSERT INTO requests (key, payload) VALUES (:key, :payload)",
                     {"key": key, "payload": offered})
        conn.execute("SAVEPOINT mutation")
        try:
            result = mutate(conn)
        except Refused as refused:
            conn.execute("ROLLBACK TO mutation")
            conn.execute("RELEASE mutation")
            refusal = str(refused.reason)
            conn.execute(
                "UPDATE requests SET refusal = :refusal WHERE key = :key",
                {"key": key, "refusal": refusal},
            )
        else:
            conn.execute("RELEASE mutation")
            conn.execute(
                "UPDATE requests SET result = :result WHERE key = :key",
                {"key": key, "result": canonical(result)},
            )
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    if refusal is not None:
        raise Refused(refusal)
    return "applied", result
