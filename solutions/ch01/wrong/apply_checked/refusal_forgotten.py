"""WRONG ANSWER to exercise 01.1 (chapter 01): the refusal is forgotten.

The mistake: ``Refused`` is handled like any other exception, the way
``apply_once`` handles a failing mutation. The whole transaction rolls back,
the request row with it, so the key keeps no answer: a replay runs the
mutation again and, once the item is stocked, applies what the key refused.
Caught by ``test_a_refusal_is_kept_and_a_replay_hears_it``.
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
        result = mutate(conn)  # a refusal rolls everything back, like a crash
        conn.execute(
            "UPDATE requests SET result = :result WHERE key = :key",
            {"key": key, "result": canonical(result)},
        )
    if refusal is not None:
        raise Refused(refusal)  # committed first: the refusal is on record
    return "applied", result
