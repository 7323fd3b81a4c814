"""The worker's clock. Caught by
``test_the_databases_clock_decides_not_the_workers``."""

import time

SERVER_NOW = ":now"


def claim_parameters(claim, outcome, _reference=claim_parameters):
    return {**_reference(claim, outcome), "now": time.time()}
