"""The claim and the mutation commit together, the result is stored afterwards in a
transaction of its own. Caught by
``test_a_kill_after_the_mutation_returned_leaves_all_or_nothing``."""


def apply_checked(conn, key, payload, mutate, _reference=apply_checked):  # noqa: F821
    said, result = _reference(conn, key, payload, mutate)
    if said == "applied":
        with transaction(conn):  # the note is committed; its result follows
            conn.execute("UPDATE requests SET result = :result WHERE key = :key",
                         {"key": key, "result": canonical(result)})
    return said, result


def record(conn, key, *, result=None, refusal=None):
    if refusal is not None:  # the result waits for the second transaction
        conn.execute("UPDATE requests SET refusal = :refusal WHERE key = :key",
                     {"key": key, "refusal": refusal})
