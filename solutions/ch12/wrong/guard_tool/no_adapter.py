"""The key without the journal. Caught by
``test_a_kill_after_the_provider_accepted_leaves_one_message``."""

from crashcourse.effects import operation_key


def order_desk_tool(mail_path: str, journal_path: str, task: str):
    """``notify_order_desk`` with the action's key in its header, and no more."""

    def key(**arguments) -> str:
        return operation_key(task, "notify_order_desk", "call", arguments)

    def tool(**arguments) -> dict:
        sku, quantity = arguments["sku"], arguments["quantity"]
        return mail.submit(mail_path, ORDER_DESK, f"order: {quantity} x {sku}",
                           f"{quantity} x {sku} ordered today",
                           {mail.KEY_HEADER: key(**arguments)})

    tool.key = key
    return tool
