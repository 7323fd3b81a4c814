"""The claim COMMITTED first, the mutation in a second transaction. Caught by
``test_a_kill_inside_the_mutation_leaves_nothing_and_the_rerun_applies`` and
``test_a_failing_mutation_leaves_no_request_row``."""


def apply_checked(conn, key, payload, mutate):
    check_text("operation key", key)
    offered = spelled(payload)
    with transaction(conn):  # the claim commits on its own ...
        if not claim(conn, key, offered):
            return replayed(conn, key, offered, payload)
    with transaction(conn):  # ... and the mutation in a transaction of its own
        result, refusal = mutated(conn, key, mutate)
    if refusal is not None:
        raise Refused(refusal)
    return "applied", result
