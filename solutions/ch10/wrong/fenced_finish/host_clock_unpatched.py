"""The worker's clock, read so that patching ``time.time`` does not see it. Caught by
``test_the_databases_clock_decides_not_the_workers``."""

from datetime import datetime

SERVER_NOW = ":now"


def claim_parameters(claim, outcome, _reference=claim_parameters):
    return {**_reference(claim, outcome), "now": datetime.now().timestamp()}
