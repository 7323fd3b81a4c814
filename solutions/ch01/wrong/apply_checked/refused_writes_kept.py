"""The refusal recorded, but no savepoint undoes what the mutation wrote before it
refused: the note commits with the refusal. Caught by
``test_a_refusal_is_kept_and_a_replay_hears_it``."""


def mutated(conn, key, mutate):
    try:
        result = mutate(conn)
    except Refused as refused:  # its writes stay
        record(conn, key, refusal=str(refused.reason))
        return None, str(refused.reason)
    record(conn, key, result=result)
    return result, None
