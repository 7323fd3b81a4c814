"""The payment service's file by name. Caught by
``test_the_choice_follows_the_role_not_the_name``."""


def choose_modes(roles: dict[str, str]) -> dict[str, Mode]:
    """FULL for payments.sqlite, NORMAL for every other file."""
    return {name: Mode("WAL", "FULL" if name == "payments.sqlite" else "NORMAL")
            for name in roles}
