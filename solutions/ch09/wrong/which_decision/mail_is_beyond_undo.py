"""WRONG ANSWER to exercise 09.3 (chapter 09): what is beyond undo is the mail.

The mistake: "beyond undo" is read from the action's name: a ``send_mail``
done or in doubt. In the restock plan the mails are the only irreversible
steps, so every case there agrees. But the plan's flag says what cannot be
taken back, whatever the action: a rename the plan marks irreversible (a
price list published under its public name, already downloaded) cannot be
restored either. With one done and the plan judged wrong, this rule unwinds,
and the unwind writes a compensation record for it at night (C5). Caught by
``test_drawn_plans_meet_the_consequences``.
"""


def beyond_undo(situation: Situation) -> tuple[int, ...]:
    """The mails done or in doubt."""
    done = [e["step"] for e in situation.shown["irreversible_done"]
            if e["action"] == "send_mail"]
    doubt = situation.shown["in_doubt"]
    if doubt is not None and doubt["action"] == "send_mail":
        done.append(doubt["step"])
    return tuple(sorted(done))
