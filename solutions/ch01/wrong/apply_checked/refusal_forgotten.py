"""``Refused`` handled like any other exception (as ``apply_once`` does): the whole
transaction rolls back, the request row with it, and a replay applies what the key
refused once the item is stocked. Caught by
``test_a_refusal_is_kept_and_a_replay_hears_it``."""


def mutated(conn, key, mutate):
    result = mutate(conn)  # a refusal rolls everything back, like a crash
    record(conn, key, result=result)
    return result, None
