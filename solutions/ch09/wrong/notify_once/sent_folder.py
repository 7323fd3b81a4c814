"""WRONG ANSWER to exercise 09.2 (chapter 09): the probe reads the sent folder.

The mistake: the pending row is there and the provider is asked, but about
DELIVERY: the probe looks for the key among delivered messages
(``mail.sent_folder``). A notice the provider accepted a moment before the
kill is still queued, so the probe says "not sent" and the resumed process
submits a second one. The question a retry needs answered is "did the
provider accept it?", queued included (``mail.probe_sent``). Caught by
``test_killed_after_the_provider_accepted_the_supplier_gets_one_message``.
"""


def notify_supplier(state: sqlite3.Connection, mail_path: str, task: str,
                    order: str, amount: int, currency: str, *,
                    recipient: str = SUPPLIER,
                    credential: str | None = None) -> dict:
    """Tell the supplier that ``task`` paid ``order`` (one live notifier)."""
    check_text("task", task)
    check_text("order", order)
    check_amount(amount)
    check_currency(currency)
    if "@" not in str(recipient):
        raise ValueError(f"not an address: {recipient!r}")
    if paying.load_checkpoint(state, task) is None:
        raise ValueError(f"task {task!r} is not paid: there is nothing to notify")
    install(state)
    key = notice_key(task, order, recipient)
    where = {"task": task, "key": key, "recipient": recipient}
    with immediate(state):  # the intent, before anything leaves the process
        row = state.execute("SELECT state, message_id FROM supplier_notices"
                            " WHERE task = :task", where).fetchone()
        if row is None:
            state.execute(
                "INSERT INTO supplier_notices (task, operation_key, recipient, state)"
                f" VALUES (:task, :key, :recipient, '{PENDING}')", where)
    if row is not None and row["state"] == NOTIFIED:
        return {"notification": ALREADY, "message_id": row["message_id"]}
    # A pending row: the last run died after its intent. Ask the provider by
    # key whether it ACCEPTED the notice (queued counts), before sending.
    delivered = [m for m in mail.sent_folder(mail_path)
                 if m["operation_key"] == key] if row else []
    if delivered:
        settled, message_id = PROBED, delivered[0]["message_id"]
    else:
        accepted = mail.submit(
            mail_path, recipient, f"payment sent: {order}",
            f"{order}: {amount} cents {currency} paid ({task})",
            {mail.KEY_HEADER: key}, credential=credential)
        settled, message_id = SENT, accepted["message_id"]
    with immediate(state):
        state.execute(
            f"UPDATE supplier_notices SET state = '{NOTIFIED}',"
            " message_id = :message_id, settled_by = :settled"
            " WHERE task = :task",
            {"task": task, "message_id": message_id, "settled": settled})
    return {"notification": settled, "message_id": message_id}
