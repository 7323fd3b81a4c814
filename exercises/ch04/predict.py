"""Exercise 04.1: what remains after each kill point (chapter 04)."""


def predict(boundary: str) -> dict:
    """Your prediction for a kill at ``boundary`` on a budget of one payment.

    Return a dict with:

    * ``"payments_at_kill"``: committed payments right after the kill (int);
    * ``"charged_at_kill"``: ``budget_snapshot(...)["charged_actions"]`` then;
    * ``"replacement"``: what the restarted worker with the SAME key reports:
      ``"committed"``, ``"already_committed"`` or a refusal reason;
    * ``"fresh_key"``: what a worker with a FRESH key for the same order gets;
    * ``"payments_final"``: committed payments at the end.

    ``boundary`` is ``"payment_inserted"`` or ``"after_payment"``.
    """
    raise NotImplementedError("exercise 04.1")
