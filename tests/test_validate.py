"""crashcourse.validate: the checks every module makes at its door (issue 14),
of which the runtime's refusals are made."""

from __future__ import annotations

import math
import os

import pytest

from crashcourse import validate
from crashcourse.validate import MAX_CENTS, MAX_COUNT


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


# --- issue 23: every door check at its edges, and the values Python's ``==``
# blurs (``1``, ``1.0``, ``True``), which the checks and canonical JSON keep
# apart; each test fails on the one-line mutant its docstring names


def test_a_count_runs_from_zero_to_its_ceiling_inclusive():
    """Bugs: ``0 < value`` or ``value < ceiling`` (an edge refused), or the
    bool/int check loosened (``True`` counted as 1)."""
    assert validate.check_count("n", 0) == 0
    assert validate.check_count("n", MAX_COUNT) == MAX_COUNT
    assert validate.check_count("n", 7, ceiling=7) == 7
    for bad in (-1, MAX_COUNT + 1):
        with pytest.raises(ValueError):
            validate.check_count("n", bad)
    with pytest.raises(ValueError):
        validate.check_count("n", 8, ceiling=7)
    for blurred in (True, False, 1.0, "1", None):
        with pytest.raises(TypeError):
            validate.check_count("n", blurred)


def test_an_amount_is_whole_cents_from_one_to_the_cap():
    """Bugs: ``0 <= amount`` (a zero charge), ``amount < MAX_CENTS`` (the cap
    refused), or ``4000.0`` and ``True`` taken as cents."""
    assert validate.check_amount(1) == 1
    assert validate.check_amount(MAX_CENTS) == MAX_CENTS
    for bad in (0, -1, MAX_CENTS + 1):
        with pytest.raises(ValueError):
            validate.check_amount(bad)
    for blurred in (True, 4000.0, float("nan"), "4000", None):
        with pytest.raises(TypeError):
            validate.check_amount(blurred)
    with pytest.raises(TypeError, match="NaN"):
        validate.check_amount(float("nan"))


@pytest.mark.parametrize("currency, ok", [("USD", True), ("EUR", True),
                                          ("usd", False), ("US", False),
                                          ("USDX", False), (" USD", False),
                                          ("", False), (None, False)])
def test_a_currency_is_exactly_three_capital_letters(currency, ok):
    """Bug: ``CURRENCY.match`` (a prefix) for ``fullmatch``, or the str check
    dropped."""
    if ok:
        assert validate.check_currency(currency) == currency
    else:
        with pytest.raises(ValueError):
            validate.check_currency(currency)


def test_text_is_refused_blank_unless_allowed_and_none_only_when_optional():
    """Bugs: ``empty_ok`` or ``none_ok`` ignored or inverted."""
    assert validate.check_text("t", "x") == "x"
    assert validate.check_text("t", "", empty_ok=True) == ""
    assert validate.check_text("t", None, none_ok=True) is None
    for bad in ("", "   ", None, 7, b"x"):
        with pytest.raises(ValueError):
            validate.check_text("t", bad)
    with pytest.raises(ValueError):
        validate.check_text("t", None, empty_ok=True)
    with pytest.raises(ValueError):
        validate.check_text("t", "  ", none_ok=True)


def test_a_flag_is_true_or_false_itself():
    """Bug: a truthiness check: ``"false"`` would read as True."""
    assert validate.check_flag("f", True) is True
    assert validate.check_flag("f", False) is False
    for blurred in (1, 0, "false", None, 1.0):
        with pytest.raises(TypeError):
            validate.check_flag("f", blurred)


def test_an_injected_instant_is_a_finite_number_and_none_is_the_wall_clock():
    """Bugs: ``True`` or NaN taken as an instant; ``0`` (the epoch, a real
    instant) read as "no clock given"."""
    assert validate.clock(0) == 0.0 and isinstance(validate.clock(0), float)
    assert validate.clock(-5) == -5.0
    assert validate.clock(1_796_000_000.25) == 1_796_000_000.25
    assert math.isfinite(validate.clock(None)) and validate.clock(None) > 1e9
    for bad in (True, float("nan"), float("inf"), "1", [1]):
        with pytest.raises(ValueError):
            validate.clock(bad)


def test_canonical_json_keeps_apart_what_python_s_equality_blurs():
    """Bug: a canonical form that does not sort keys, keeps spaces, or lets
    NaN through: one value with two spellings, or a spelling no JSON reads."""
    spellings = {validate.canonical({"n": v}) for v in (1, 1.0, True)}
    assert spellings == {'{"n":1}', '{"n":1.0}', '{"n":true}'}
    assert validate.canonical({"b": 1, "a": [2, {"d": 3, "c": 4}]}) == (
        '{"a":[2,{"c":4,"d":3}],"b":1}')
    with pytest.raises(ValueError):
        validate.canonical({"n": float("nan")})


def test_a_bad_argument_is_one_line_and_exit_status_two(capsys):
    """Bug: ``BAD_INPUT`` other than argparse's own 2, which every program's
    docstring lists for bad input."""
    parser = validate.argument_parser("a program")
    parser.add_argument("--count", type=int, required=True)
    with pytest.raises(SystemExit) as stopped:
        parser.parse_args(["--count", "many"])
    assert stopped.value.code == 2
    said = capsys.readouterr().err
    assert said.count("\n") == 1 and ": error: " in said and "(see --help)" in said


def test_check_place_refuses_what_exists_and_is_no_regular_file(tmp_path):
    """Bug: ``check_place`` without its regular-file check: a device
    (/dev/null, /dev/full) or a FIFO in a writable folder passes, and the
    worker's store write fails deep inside SQLite (issue 23). An existing
    regular file passes."""
    fifo = tmp_path / "a-fifo"
    os.mkfifo(fifo)
    for bad in ("/dev/null", "/dev/full", str(fifo)):
        with pytest.raises(ValueError, match="not a regular file"):
            validate.check_place("--state", bad)
    (tmp_path / "kept.sqlite").write_text("")
    assert validate.check_place("--state", str(tmp_path / "kept.sqlite"))


@pytest.mark.parametrize("url", ["http://127.0.0.1:8080", "https://shop.example",
                                 "http://[::1]:80/orders", "http://h:0"])
def test_check_url_keeps_an_http_address(url):
    assert validate.check_url("--url", url) == url


@pytest.mark.parametrize("url", [
    "http://127.0.0.1:abc", "http://127.0.0.1:99999", "http://127.0.0.1:-1",
    "ftp://h", "http://", "http:///path", "127.0.0.1:80", "", " ",
    "http://h :80", "http://h\n", "http://\xff", "http://h:８０", "http://[::1",
])
def test_check_url_refuses_what_would_break_later(url):
    """Each passes ``urlsplit`` or a scheme test alone; ``http://127.0.0.1:abc``
    made workflow_worker write its reserve attempt, then crash (issue 35)."""
    with pytest.raises(ValueError, match="--url"):
        validate.check_url("--url", url)


@pytest.mark.parametrize("text, value", [("0", 0.0), ("0.05", 0.05), ("60", 60.0),
                                         ("1e1", 10.0), ("+2.5", 2.5)])
def test_check_number_keeps_an_ascii_number_in_range(text, value):
    assert validate.check_number("--pace", text, 0, 60) == value


@pytest.mark.parametrize("text", [
    "inf", "-inf", "Infinity", "nan", "NaN", "1e999", "-1e999", "1_0", " 5",
    "5 ", "\u0663", "\uff15", "\u0665.\u0660", "61", "-0.5", "", "0x10", "1e",
    "\udcff",
])
def test_check_number_refuses_infinities_overflow_and_foreign_digits(text):
    """``float`` takes most of these (issue 35): ``inf`` and ``1e999`` ran a
    checkpoint's trials and then broke its evidence write."""
    with pytest.raises(ValueError, match="--pace must be a number"):
        validate.check_number("--pace", text, 0, 60)


def test_check_number_s_low_open_excludes_its_bound():
    with pytest.raises(ValueError, match=r"\(0, 60\]"):
        validate.check_number("--ttl", "0", 0, 60, low_open=True)
    assert validate.check_number("--ttl", "0.001", 0, 60, low_open=True) == 0.001


def test_float_itself_takes_what_check_number_refuses():
    """The negative control: the hole the check closes is real."""
    for text in ("inf", "1e999", "\u0663", "1_0", " 5"):
        float(text)


# --- every number option, at the command line: refused before anything runs --

REPO = __import__("pathlib").Path(__file__).resolve().parents[1]
HOSTILE_NUMBERS = ["inf", "nan", "1e999", "\u0663", "1_0"]


def refused_at_the_door(argv: list[str], cwd) -> str:
    """Run ``argv``; one line on stderr, exit 2, nothing made in ``cwd``."""
    import subprocess
    import sys

    before = sorted(os.listdir(cwd))
    done = subprocess.run([sys.executable, *argv], capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL, cwd=cwd)
    assert done.returncode == validate.BAD_INPUT, done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert sorted(os.listdir(cwd)) == before  # no evidence, no store
    return done.stderr


@pytest.mark.parametrize("value", HOSTILE_NUMBERS)
@pytest.mark.parametrize("script, flag", [
    ("ch08_workflow_recovery.py", "--lease"),
    ("ch07_random_kill_campaign.py", "--ttl"),
    ("ch07_random_kill_campaign.py", "--wait"),
])
def test_a_checkpoint_s_seconds_refuse_what_float_takes(tmp_path, script, flag,
                                                        value):
    """``ch08 --lease inf`` ran every trial, then lost the evidence (issue 35)."""
    refused_at_the_door([str(REPO / "checkpoints" / script), "--output",
                         str(tmp_path / "evidence.json"), "--quick", flag, value],
                        tmp_path)


@pytest.mark.parametrize("value", HOSTILE_NUMBERS)
@pytest.mark.parametrize("module, flag", [("scheduler", "--interval"),
                                          ("wedged_worker", "--pace")])
def test_a_worker_s_seconds_refuse_what_float_takes(tmp_path, module, flag, value):
    from crashcourse.lab.example import scan_files
    from crashcourse.services import drive, mail

    drive.install(tmp_path / "drive.sqlite", scan_files(2))
    mail.install(tmp_path / "mail.sqlite")
    argv = {"scheduler": ["--state", str(tmp_path / "state.sqlite"), "--name",
                          "n", "--ticks", "1"],
            "wedged_worker": ["--drive", str(tmp_path / "drive.sqlite"), "--mail",
                              str(tmp_path / "mail.sqlite"), "--credential", "t",
                              "--limit", "1"]}[module]
    refused_at_the_door(["-m", f"crashcourse.workers.{module}", *argv, flag,
                         value], tmp_path)
    assert drive.names(tmp_path / "drive.sqlite") == scan_files(2)
