"""History asked first, but only whether the key exists, not what it was used for: a key
bound to 4000 USD for PO-3001 is previewed as paid for 4100 USD, EUR or another order.
Caught by ``test_a_key_cannot_be_repurposed``."""


def history(recorded, action):
    return "already_committed"  # the key is known: it was paid
