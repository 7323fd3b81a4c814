"""The lock and the comparison right, but ``EffectConflict`` carries ``(sku, quantity)``
tuples, the offered one as the recorded: ``conflict.recorded["sku"]`` crashes or says
the wrong thing. Caught by ``test_the_same_key_for_another_order_is_a_conflict``."""


def answered(key, row, offered):
    if (row[0], row[1]) != (offered["sku"], offered["quantity"]):
        raise EffectConflict(key, (offered["sku"], offered["quantity"]), tuple(row))
    return "already_placed"
