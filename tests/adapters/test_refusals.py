"""Mistakes in a reader's tool are refused with one line, before the effect
and with nothing written (chapter 12); annotations resolve in the body's own
module."""

from __future__ import annotations

import datetime
import importlib.util
import inspect
import os
import sqlite3

import pytest

from crashcourse.adapters import EffectTool, NotSerializable, ProbeContract
from crashcourse.services import mail

ARGS = {"to": "owner@shop.example", "subject": "flour ordered"}

READERS_MODULE = '''
from __future__ import annotations

Sku = str  # a type alias the adapter's module has never heard of

def restock(sku: Sku, sacks: int, *, operation_key: str) -> dict[str, Sku]:
    return {"sku": sku}
'''


def test_string_annotations_resolve_in_the_bodys_module(tmp_path):
    source = tmp_path / "readers_tools.py"
    source.write_text(READERS_MODULE)
    spec = importlib.util.spec_from_file_location("readers_tools", source)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    tool = EffectTool(module.restock, lambda **a: (False, None),
                      journal_path=str(tmp_path / "e.sqlite"), task="t")
    import typing

    assert typing.get_type_hints(tool.function) == {
        "sku": str, "sacks": int, "return": dict[str, str]}
    assert inspect.signature(tool.function).parameters["sku"].annotation is str


def test_an_unresolvable_annotation_is_one_line_at_construction(tmp_path):
    def restock(sku: NoSuchType, *, operation_key: str) -> dict:  # noqa: F821
        return {}

    with pytest.raises(TypeError, match="annotations do not resolve") as error:
        EffectTool(restock, lambda **a: (False, None),
                   journal_path=str(tmp_path / "e.sqlite"), task="t")
    assert "\n" not in str(error.value)


@pytest.fixture
def provider(tmp_path):
    path = str(tmp_path / "mail.sqlite")
    mail.install(path)
    return path


def notifier(path):
    def notify(to, subject, *, operation_key):
        return mail.submit(path, to, subject, "", {mail.KEY_HEADER: operation_key})
    return notify


def test_a_missing_probe_is_refused(tmp_path, provider):
    with pytest.raises(ProbeContract, match="a probe is required"):
        EffectTool(notifier(provider), None, journal_path=str(tmp_path / "e.sqlite"),
                   task="t")


def test_a_probe_of_the_wrong_shape_is_refused_before_the_effect(tmp_path, provider):
    book = tmp_path / "e.sqlite"
    tool = EffectTool(notifier(provider), lambda **a: False, journal_path=str(book),
                      task="t", ttl=2.0, wait_s=1.0)
    with pytest.raises(ProbeContract, match=r"must return \(done: bool") as error:
        tool(**ARGS)
    assert "\n" not in str(error.value)
    assert mail.messages(provider) == [], "the effect ran"
    assert not os.path.exists(book), "the journal was written"


def test_arguments_json_cannot_hold_are_refused_before_the_effect(tmp_path, provider):
    book = tmp_path / "e.sqlite"
    tool = EffectTool(notifier(provider), lambda **a: mail.probe_sent(
        provider, a["operation_key"]), journal_path=str(book), task="t")
    with pytest.raises(NotSerializable, match="nothing was run"):
        tool(to="owner@shop.example", subject={1, 2})
    assert mail.messages(provider) == [] and not os.path.exists(book)


def test_a_result_json_cannot_hold_leaves_the_call_in_doubt_for_the_probe(
        tmp_path, provider):
    """Found only after the effect: the call is not recorded done, and the
    next call probes it instead of mailing again."""
    book = str(tmp_path / "e.sqlite")

    def notify(to, subject, *, operation_key):
        mail.submit(provider, to, subject, "", {mail.KEY_HEADER: operation_key})
        return {"at": datetime.datetime(2026, 12, 2)}

    def notified(to, subject, *, operation_key):
        return mail.probe_sent(provider, operation_key)

    tool = EffectTool(notify, notified, journal_path=book, task="t",
                      ttl=1.0, wait_s=0.5, wait_out_s=30.0)
    with pytest.raises(NotSerializable, match="left in doubt for the probe"):
        tool(**ARGS)
    with sqlite3.connect(book) as conn:
        assert conn.execute("SELECT outcome FROM journal").fetchall() == [(None,)]
    found = tool(**ARGS)  # waits out the lease, then the probe finds it
    assert len(mail.messages(provider)) == 1
    assert found["message_id"] == mail.messages(provider)[0]["message_id"]
