"""WRONG ANSWER to exercise 03.2 (chapter 03): the reference answer, loaded.

Gaming: ``every_reason`` is taken from
``solutions/ch03/terms.py``, found beside the installed package. Every case
passes and nothing was written. The grader seals the answer: while it loads
and while its functions run, no file under ``solutions/`` may be opened.
Caught by ``test_every_reason`` (and every other test).
"""

import importlib.util
from pathlib import Path

import crashcourse


def every_reason(approval, action, now, policy) -> tuple[str, ...]:
    """Every reason ``approval`` does not authorize ``action``, in order."""
    path = (Path(crashcourse.__file__).resolve().parents[2]
            / "solutions" / "ch03" / "terms.py")
    spec = importlib.util.spec_from_file_location("reference", path)
    reference = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reference)
    return reference.every_reason(approval, action, now, policy)
