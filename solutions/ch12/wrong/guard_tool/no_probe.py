"""WRONG ANSWER to exercise 12.3 (chapter 12): a probe that never finds anything.

The mistake: the probe answers "not sent" without asking the provider, as
if the intent alone were enough. The resumed call finds its intent in doubt,
the probe says nothing went out, and the adapter sends again: two messages.
Caught by ``test_a_kill_after_the_provider_accepted_leaves_one_message``.
"""


def probe(mail_path, sku, quantity, key):
    return False, {"message_id": None}  # never asks: a doubt is always "not sent"
