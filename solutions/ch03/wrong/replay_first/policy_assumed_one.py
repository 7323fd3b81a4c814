"""The service's policy taken to be 1, the one every file starts with: once the owner
moves it, an approval granted again under version 2 is previewed as ``policy_changed``.
Caught by ``test_the_current_policy_is_read_from_the_file`` and
``test_a_new_payment_after_the_policy_moved_twice``."""


def judged(approval, action, policy, _reference=judged):  # noqa: F821
    return _reference(approval, action, 1)  # the file's policy not read
