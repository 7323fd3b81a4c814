"""crashcourse.validate: the checks every module makes at its door (issue 14),
of which the runtime's refusals are made."""

from __future__ import annotations

import pytest

from crashcourse import validate


@pytest.mark.parametrize("value", [True, False])
def test_check_flag_keeps_a_bool(value):
    assert validate.check_flag("flag", value) is value


@pytest.mark.parametrize("value", ["false", "True", 0, 1, None, 0.0, [], "0"])
def test_check_flag_refuses_everything_else(value):
    with pytest.raises(TypeError, match="flag must be True or False"):
        validate.check_flag("flag", value)


def test_check_text_none_ok_is_only_for_none():
    assert validate.check_text("id", None, none_ok=True) is None
    assert validate.check_text("id", "w-1", none_ok=True) == "w-1"
    for bad in ("", " ", 0):
        with pytest.raises(ValueError):
            validate.check_text("id", bad, none_ok=True)
    with pytest.raises(ValueError):
        validate.check_text("id", None)


def test_check_place_looks_and_creates_nothing(tmp_path):
    (tmp_path / "a-file").write_text("")
    assert validate.check_place("--state", str(tmp_path / "new.sqlite"))
    for bad in ("", " ", str(tmp_path), str(tmp_path / "missing" / "x.sqlite"),
                str(tmp_path / "a-file" / "x.sqlite"), "/dev/null/x.sqlite", None):
        with pytest.raises(ValueError):
            validate.check_place("--state", bad)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


@pytest.mark.parametrize("value", ["t\udcff", "\udced\udca0\udc80", "ok\ud800"])
def test_check_text_refuses_what_utf_8_cannot_spell(value):
    """Bytes that are not UTF-8 reach a program as lone surrogates; SQLite
    and JSON would raise deep inside a write (issue 23)."""
    with pytest.raises(ValueError, match="UTF-8"):
        validate.check_text("id", value)


def test_check_text_keeps_any_utf_8_text():
    for value in ("ordre-é", "注文-1", "emoji-\U0001f4e6", " padded "):
        assert validate.check_text("id", value) == value


@pytest.mark.parametrize("currency", ["ÉUR", "ＵＳＤ", "ΑΒΓ", "ǄAB", "USD\n", "U D"])
def test_check_currency_takes_ascii_capitals_only(currency):
    """Three capitals, as ISO 4217 spells them: letters that are upper case in
    another script are refused (str.isupper alone would take them)."""
    with pytest.raises(ValueError, match="three upper-case letters"):
        validate.check_currency(currency)
    assert validate.check_currency("EUR") == "EUR"
