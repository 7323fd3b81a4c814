"""WRONG ANSWER to exercise 01.1 (chapter 01): the refused mutation's writes stay.

The mistake: the refusal is recorded in the same transaction, but nothing
undoes what the mutation wrote before it refused (no savepoint). The note it
inserted commits with the refusal: the board shows a note the key says was
refused. Caught by ``test_a_refusal_is_kept_and_a_replay_hears_it`` (no note
may remain).
"""


def apply_checked(
    conn: sqlite3.Connection,
    key: str,
    payload: Any,
    mutate: Callable[[sqlite3.Connection], Any],
) -> tuple[str, Any]:
    """Commit ``mutate(conn)``'s writes at most once per ``key``; keep its answer."""
    check_text("operation key", key)  # ValueError before anything is written
    offered = canonical(payload)  # one spelling per value: sorted keys
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
                raise EffectConflict(key, json.loads(row["payload"]), payload)
            if row["refusal"] is not None:  # the answer this key was given
                raise Refused(row["refusal"])
            return "already_applied", json.loads(row["result"])
        try:
            result = mutate(conn)
        except Refused as refused:  # whatever it wrote before refusing stays
            refusal = str(refused.reason)
            conn.execute(
                "UPDATE requests SET refusal = :refusal WHERE key = :key",
                {"key": key, "refusal": refusal},
            )
        else:  # any other exception rolls the whole transaction back
            conn.execute(
                "UPDATE requests SET result = :result WHERE key = :key",
                {"key": key, "result": canonical(result)},
            )
    if refusal is not None:
        raise Refused(refusal)  # committed first: the refusal is on record
    return "applied", result
