"""Exercise 04.1: who gets the last unit after a kill (chapter 04)."""


def predict(boundary: str) -> dict:
    """Your prediction for one unit left and worker A killed at ``boundary``.

    The service has a budget of ONE payment. Worker A pays order PO-A under
    key ``pay-a`` and is SIGKILLed at ``boundary``. Then worker B pays order
    PO-B under key ``pay-b`` and runs to the end. Only then is A's
    replacement started: the same worker, the same key ``pay-a``.

    Return a dict with:

    * ``"payments_at_kill"``: committed payments right after A's kill (int);
    * ``"worker_b"``: what B reports: ``"committed"``, ``"already_committed"``
      or a refusal reason such as ``"budget_action_limit"``;
    * ``"a_replacement"``: what A's replacement reports, in the same words;
    * ``"paid_keys"``: the keys with a committed payment at the end, sorted.

    ``boundary`` is ``"before_payment"`` (A has not asked the service yet),
    ``"payment_inserted"`` (inside A's payment transaction, after the INSERT,
    before the COMMIT) or ``"after_payment"`` (after the commit, before A's
    checkpoint).
    """
    raise NotImplementedError("exercise 04.1")
