"""WRONG ANSWER to exercise 01.1 (chapter 01): the result written in a second
transaction.

The mutation and the claim commit together, as they must; the result is
stored afterwards, in a transaction of its own. Every call that completes
leaves the right row, but a process killed between the two commits leaves
the note and a request row whose ``result`` is NULL: the replacement
answers ``("already_applied", None)`` for a note whose result nobody will
ever hear. Caught by
``test_a_kill_after_the_mutation_returned_leaves_all_or_nothing`` (the kill
as the second transaction starts).
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
    with immediate(conn):
        claimed = conn.execute(
            "INSERT INTO requests (key, payload) VALUES (:key, :payload)"
            " ON CONFLICT (key) DO NOTHING",
            {"key": key, "payload": offered},
        ).rowcount
        if not claimed:
            row = conn.execute(
                "SELECT payload, result, refusal FROM requests WHERE key = :key",
                {"key": key},
            ).fetchone()
            if row["payload"] != offered:
                raise EffectConflict(key, json.loads(row["payload"]), payload)
            if row["refusal"] is not None:
                raise Refused(row["refusal"])
            return "already_applied", json.loads(row["result"])
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
    if refusal is not None:
        raise Refused(refusal)
    with immediate(conn):  # the note is committed; its result follows
        conn.execute(
            "UPDATE requests SET result = :result WHERE key = :key",
            {"key": key, "result": canonical(result)},
        )
    return "applied", result
