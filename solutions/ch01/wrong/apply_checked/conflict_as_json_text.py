"""``EffectConflict`` carries the payloads as the JSON text the table stores, not the
values the caller can read (``conflict.recorded["quantity"]`` is a TypeError). Caught by
``test_a_changed_payload_is_refused_and_nothing_moves``."""


def replayed(conn, key, offered, payload):
    row = conn.execute("SELECT payload, result, refusal FROM requests"
                       " WHERE key = :key", {"key": key}).fetchone()
    if row["payload"] != offered:
        raise EffectConflict(key, row["payload"], offered)  # JSON text
    if row["refusal"] is not None:
        raise Refused(row["refusal"])
    return "already_applied", json.loads(row["result"])
