"""WRONG ANSWER to exercise 01.1 (chapter 01): the claim and the mutation in two
transactions.

The mistake: the request row is claimed and COMMITTED first, and the mutation
runs in a second transaction. A process killed between the two, or inside
the second, leaves a key with no answer and no effect: the replacement finds
the claim, takes it for a replay and reports "already applied" (with no
result) for a note that was never posted. A mutation that fails leaves the
claim behind the same way. Caught by
``test_a_kill_inside_the_mutation_leaves_nothing_and_the_rerun_applies`` and
``test_a_failing_mutation_leaves_no_request_row``.
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
    with immediate(conn):  # the claim commits on its own ...
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
    with immediate(conn):  # ... and the mutation in a transaction of its own
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
