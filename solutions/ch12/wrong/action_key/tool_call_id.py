"""The key is the call's position. Caught by
``test_a_re_asked_model_gets_the_same_key``."""


def action_key(task: str, call: dict) -> str:
    return f"{task}/{call['id']}"
