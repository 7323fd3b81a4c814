"""WRONG ANSWER to exercise 01.1 (chapter 01): payloads compared as printed.

The mistake: the payload is stored and compared as ``str(payload)``, Python's
printed form, instead of one canonical JSON spelling. Two dicts with the same
items in another order print differently, so a genuine replay from a rebuilt
payload is refused as a conflict. Caught by
``test_a_replay_in_a_new_connection_returns_the_recorded_result``.
"""


def apply_checked(
    conn: sqlite3.Connection,
    key: str,
    payload: Any,
    mutate: Callable[[sqlite3.Connection], Any],
) -> tuple[str, Any]:
    """Commit ``mutate(conn)``'s writes at most once per ``key``; keep its answer."""
    check_text("operation key", key)  # ValueError before anything is written
    offered = str(payload)  # as Python prints it
    refusal = None
    with immediate(conn):
        # Claim first; the primary key says whether this call won the claim.
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
                raise EffectConflict(key, row["payload"], payload)
            if row["refusal"] is not None:  # the answer this key was given
                raise Refused(row["refusal"])
            return "already_applied", json.loads(row["result"])
        conn.execute("SAVEPOINT mutation")  # what mutate writes can be undone alone
        try:
            result = mutate(conn)
        except Refused as refused:
            conn.execute("ROLLBACK TO mutation")  # its writes go, the claim stays
            conn.execute("RELEASE mutation")
            refusal = str(refused.reason)
            conn.execute(
                "UPDATE requests SET refusal = :refusal WHERE key = :key",
                {"key": key, "refusal": refusal},
            )
        else:  # any other exception rolls the whole transaction back
            conn.execute("RELEASE mutation")
            conn.execute(
                "UPDATE requests SET result = :result WHERE key = :key",
                {"key": key, "result": canonical(result)},
            )
    if refusal is not None:
        raise Refused(refusal)  # committed first: the refusal is on record
    return "applied", result
