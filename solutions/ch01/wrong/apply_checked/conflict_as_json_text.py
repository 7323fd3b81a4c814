"""WRONG ANSWER to exercise 01.1 (chapter 01): the conflict raised with the
stored JSON text.

The mistake: the comparison is right, but ``EffectConflict`` carries the
payloads as the canonical JSON strings the table stores, not as the values
the caller handed in and can read (``conflict.recorded["quantity"]`` is then
a TypeError). Caught by ``test_a_changed_payload_is_refused_and_nothing_moves``.
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
                raise EffectConflict(key, row["payload"], offered)  # the text
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
            conn.execute(
                "UPDATE requests SET result = :result WHERE key = :key",
                {"key": key, "result": canonical(result)},
            )
    if refusal is not None:
        raise Refused(refusal)
    return "applied", result
