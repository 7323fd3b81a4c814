"""A missing row in ``budget_caps`` read as "no limit in this currency" instead of "no
allowance": any payment in a currency the owner never thought of goes through. Caught by
``test_currency_caps[uncapped-currency]``."""


def over_cap(cap, total_cents):
    return cap is not None and total_cents > cap[0]
