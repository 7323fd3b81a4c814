"""One row, written after the mail. Caught by
``test_killed_after_the_provider_accepted_the_supplier_gets_one_message``."""


def notify_supplier(state: sqlite3.Connection, mail_path: str, task: str,
                    order: str, amount: int, currency: str, *,
                    recipient: str = SUPPLIER,
                    credential: str | None = None) -> dict:
    """Tell the supplier that ``task`` paid ``order`` (one live notifier)."""
    refuse_unless_notifiable(state, task, order, amount, currency, recipient)
    install(state)
    key = notice_key(task, order, recipient)
    where = {"task": task, "key": key, "recipient": recipient}
    row = state.execute("SELECT state, message_id FROM supplier_notices"
                        " WHERE task = :task", where).fetchone()
    if row is not None:  # recorded: it went out
        return {"notification": ALREADY, "message_id": row["message_id"]}
    accepted = mail.submit(
        mail_path, recipient, f"payment sent: {order}",
        f"{order}: {amount} cents {currency} paid ({task})",
        {mail.KEY_HEADER: key}, credential=credential)
    with immediate(state):  # one row, once the provider has it
        state.execute(
            "INSERT INTO supplier_notices (task, operation_key, recipient, state,"
            f" message_id, settled_by) VALUES (:task, :key, :recipient, '{NOTIFIED}',"
            f" :message_id, '{SENT}')",
            {**where, "message_id": accepted["message_id"]})
    return {"notification": SENT, "message_id": accepted["message_id"]}
