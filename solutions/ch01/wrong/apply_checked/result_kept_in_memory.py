"""The claim, the savepoint and the refusal right, but the result kept in the process (a
dict), not in the ``result`` column: a replay in the same process answers right, the
replacement process answers ``("already_applied", None)``. Caught by
``test_first_call_applies_and_returns_the_result`` and
``test_a_replay_in_a_fresh_process_answers_from_the_stored_row``."""


def record(conn, key, *, result=None, refusal=None):
    if refusal is not None:
        conn.execute("UPDATE requests SET refusal = :refusal WHERE key = :key",
                     {"key": key, "refusal": refusal})
    else:
        record.results[key] = result  # the process remembers it


record.results = {}


def replayed(conn, key, offered, payload):
    row = conn.execute("SELECT payload, refusal FROM requests WHERE key = :key",
                       {"key": key}).fetchone()
    if row["payload"] != offered:
        raise EffectConflict(key, json.loads(row["payload"]), payload)
    if row["refusal"] is not None:
        raise Refused(row["refusal"])
    return "already_applied", record.results.get(key)
