"""The chapter 12 checkpoint: its quick mode, its counts against its rows, and
the rule that makes a duplicate under the fix fail the run.

Quick mode kills LangGraph's prebuilt agent (``durability="exit"``) after the
supplier acknowledged the order, once per key, and resumes it through
LangGraph's own recovery. Every count is checked against the supplier's and
the provider's rows the trial carries; the finding (two orders) and the fix
(one order, found by the adapter's probe) are read from those rows.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.checkpoints import script

pytest.importorskip("langgraph")  # the frameworks are the package's extra 'frameworks'

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "checkpoints" / "ch12_frameworks.py"


@pytest.fixture(scope="module")
def quick(quick_checkpoint):
    done = quick_checkpoint(SCRIPT.stem)  # --quick, shared (conftest)
    assert done.returncode == 0, done.stderr[-3000:]
    return {t["key"]: t for t in done.evidence["trials"]}


def test_quick_mode_kills_once_per_key(quick):
    assert sorted(quick) == ["action", "none", "position"]
    for trial in quick.values():
        assert (trial["framework"], trial["mode"], trial["kill_point"]) == (
            "langgraph-prebuilt", "durability=exit", "after_ack")
        assert trial["returncode"] == -9 and trial["resumed_returncode"] == 0
        assert trial["version"]  # the installed langgraph, not a typed number


def test_every_count_is_its_rows(quick):
    for trial in quick.values():
        rows = trial["rows"]
        assert all(o["work_id"] == trial["trial"] for o in rows["orders"])
        assert trial["orders_at_service"] == len(rows["orders"])
        assert trial["duplicates"] == len(rows["orders"]) - 1
        assert trial["order_keys"] == [o["operation_key"] for o in rows["orders"]]
        assert trial["messages_at_provider"] == len(rows["messages"])
        assert trial["supplier_requests"] == [[r["method"], r["answer"]]
                                              for r in rows["requests"]]


def test_the_finding_two_orders_without_a_key_from_the_action(quick):
    """Under ``exit`` nothing was checkpointed: the resume asks the model
    again, which mints a new call id, so even the position key changes."""
    for key in ("none", "position"):
        trial = quick[key]
        assert trial["role"] == "finding" and trial["holds"]
        assert trial["orders_at_service"] == 2
        first, second = trial["order_keys"]
        assert first != second
    thread = quick["position"]["order_keys"][0].rsplit("/", 1)[0]
    assert all(k.startswith(thread + "/call_") for k in quick["position"]["order_keys"])


def test_the_fix_one_order_found_by_the_probe(quick):
    trial = quick["action"]
    assert trial["role"] == "fix" and trial["holds"]
    assert trial["orders_at_service"] == 1 and trial["messages_at_provider"] == 1
    methods = [method for method, _ in trial["supplier_requests"]]
    assert methods.count("POST") == 1, "the resumed call sent the order again"
    assert ["GET", 200] in trial["supplier_requests"]  # the probe found it


def test_a_duplicate_under_the_fix_fails_the_trial(quick):
    judge = script("ch12_frameworks").judge
    fixed = {k: v for k, v in quick["action"].items() if k not in ("role", "holds")}
    assert judge(fixed)["holds"] is True
    assert judge({**fixed, "orders_at_service": 2})["holds"] is False
    assert judge({**fixed, "messages_at_provider": 2})["holds"] is False
    assert judge({**fixed, "returncode": 0})["holds"] is False
    finding = {k: v for k, v in quick["none"].items() if k not in ("role", "holds")}
    assert judge(finding)["holds"] is True  # counted, whatever it duplicated
    assert judge({**finding, "resumed_returncode": 1})["holds"] is False


def test_the_late_mail_window_is_measured_not_judged_as_the_fix():
    """``paused_before_mail``: the provider takes no key, so a mail admitted
    before the freeze may leave after the thaw; the trial holds when it ran
    and (action key) the supplier has one order, whatever the messages."""
    judge = script("ch12_frameworks").judge
    ran = {"trial": "t", "key": "action", "kill_point": "paused_before_mail",
           "returncode": 0, "paused_alive_while_replaced": True,
           "orders_before_thaw": 1, "resumed_returncode": 0,
           "orders_at_service": 1, "messages_at_provider": 2, "late_messages": 1}
    assert judge(ran) | {} == {**ran, "role": "window", "holds": True}
    assert judge({**ran, "orders_at_service": 2})["holds"] is False
    assert judge({**ran, "paused_alive_while_replaced": False})["holds"] is False
    assert judge({**ran, "key": "none", "orders_at_service": 2})["holds"] is True
    before = {**ran, "kill_point": "paused_before_request"}
    assert judge(before)["role"] == "fix" and judge(before)["holds"] is False


def test_the_default_run_is_the_chapters_six_frameworks(tmp_path):
    """The committed matrix covers six frameworks; the default plan is those
    cells, and a name that selects nothing is refused before anything runs
    (it was silently ignored: a typo measured fewer frameworks)."""
    import argparse
    import subprocess
    import sys

    checkpoint = script("ch12_frameworks")
    default = argparse.Namespace(quick=False, frameworks=None, points=None,
                                 trials=1, other_trials=1)
    planned = {variant.framework for variant, *_ in checkpoint.plan(default)}
    assert planned == {"langgraph-prebuilt", "langgraph-functional", "dbos",
                       "pydantic-ai-dbos", "temporal", "restate", "openai-agents"}
    for option in (["--frameworks", "restate,langraph"], ["--points", "after_ak"]):
        done = subprocess.run([sys.executable, str(SCRIPT), "--output",
                               str(tmp_path / "never.json"), *option],
                              capture_output=True, text=True, timeout=120,
                              check=False)
        assert done.returncode == 2 and "unknown" in done.stderr, done.stderr
    assert not (tmp_path / "never.json").exists()
