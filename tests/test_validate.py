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
