"""One row, written after the mail: no intent before it. Caught by
``test_killed_after_the_provider_accepted_the_supplier_gets_one_message``."""


def record_intent(state, notice):
    return state.execute("SELECT state, message_id FROM supplier_notices"
                         " WHERE task = :task", notice).fetchone()


def record_notified(state, notice, message_id, settled):
    with immediate(state):  # one row, once the provider has it
        state.execute(
            "INSERT INTO supplier_notices (task, operation_key, recipient, state,"
            f" message_id, settled_by) VALUES (:task, :key, :recipient, '{NOTIFIED}',"
            " :message_id, :settled)",
            {**notice, "message_id": message_id, "settled": settled})
