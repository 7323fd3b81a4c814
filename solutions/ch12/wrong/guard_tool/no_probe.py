"""A probe that never finds anything. Caught by
``test_a_kill_after_the_provider_accepted_leaves_one_message``."""


def probe(mail_path, sku, quantity, key):
    return False, {"message_id": None}  # never asks: a doubt is always "not sent"
