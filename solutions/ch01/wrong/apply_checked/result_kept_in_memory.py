"""WRONG ANSWER to exercise 01.1 (chapter 01): the result kept in memory.

The mistake: the claim, the savepoint and the refusal are right, but the
mutation's result is kept in a dict in the process (here the function's own
attribute; a module-level dict is the same), not in the ``result`` column. A
replay in the same process answers correctly, so tests that replay from a
new connection in one process pass; the replacement process, whose memory
starts empty, answers ``("already_applied", None)``. Caught by
``test_first_call_applies_and_returns_the_result`` (the stored row) and
``test_a_replay_in_a_fresh_process_answers_from_the_stored_row``.
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
                "SELECT payload, refusal FROM requests WHERE key = :key",
                {"key": key},
            ).fetchone()
            if row["payload"] != offered:
                raise EffectConflict(key, json.loads(row["payload"]), payload)
            if row["refusal"] is not None:
                raise Refused(row["refusal"])
            return "already_applied", apply_checked.results.get(key)
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
            apply_checked.results[key] = result  # the process remembers it
    if refusal is not None:
        raise Refused(refusal)
    return "applied", result


apply_checked.results = {}
