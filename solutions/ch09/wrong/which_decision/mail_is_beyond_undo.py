"""What is beyond undo is the mail. Caught by
``test_drawn_plans_meet_the_consequences``."""


def beyond_undo(situation: Situation) -> tuple[int, ...]:
    """The mails done or in doubt."""
    done = [e["step"] for e in situation.shown["irreversible_done"]
            if e["action"] == "send_mail"]
    doubt = situation.shown["in_doubt"]
    if doubt is not None and doubt["action"] == "send_mail":
        done.append(doubt["step"])
    return tuple(sorted(done))
