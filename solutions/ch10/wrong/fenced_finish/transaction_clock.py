"""``now()`` for the clock. Caught by
``test_a_write_that_waited_for_the_row_is_judged_when_it_lands``."""

SERVER_NOW = "extract(epoch FROM now())"
