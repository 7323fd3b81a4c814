"""WRONG ANSWER to exercise 12.1 (chapter 12): the key is the call's position.

The mistake: the key is the task and the model's tool-call id. It is the
same while the framework's record of the model turn survives; once the turn
is asked again (LangGraph's ``durability="exit"`` after a kill), the model
mints a new id and the supplier sees a new key: a second order. Caught by
``test_a_re_asked_model_gets_the_same_key``.
"""


def action_key(task: str, call: dict) -> str:
    """The supplier's key for the action ``call`` asks for, made for ``task``."""
    return f"{task}/{call['id']}"
