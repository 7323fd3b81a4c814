"""The release planned under the reserve step's own operation key. Caught by
``test_the_plan_is_what_the_runtime_then_does`` and
``test_the_release_has_its_own_key_so_carrying_it_out_twice_releases_once``."""


def release_key(workflow_id, step, order_key):
    return order_key  # "the key of the thing being undone"
