"""The shop's three tools, its scripted model and the keys (chapter 12).

The agent restocks flour with three tool calls against the book's real
services: ``reserve_stock`` (the drive: the stock sheet is renamed to say
what is reserved, an END STATE), ``place_order`` (the supplier, a real HTTP
server process: every POST is one more order unless its ``Idempotency-Key``
was seen before) and ``send_confirmation`` (the mail provider: every
submission is one more message, whatever the key header says).

THE MODEL is scripted and offline, but behaves as a real one does in the two
ways that matter here. Its next message is derived from the conversation it
is shown (how many tool results it holds), never from a counter in memory,
so a restarted process that shows it the same history gets the same next
request. And every tool call it emits carries a FRESH random id
(``call_…``), as a real model mints one per call: asked again, it asks for
the same action under another id. A real model asked again may also change
the arguments; this one never does, which is the favourable case for any
key.

THE KEY a tool sends with its request is one of three (``KEYS``):

* ``none``: a fresh random key per request, what a client that never thinks
  about keys amounts to (the supplier refuses a request with no key at all);
* ``position``: built from where the framework says the call is (a
  ``tool_call_id``; thread and task id; workflow and step id): the same key
  only while the framework's record of that position survives;
* ``action``: the tool runs behind ``crashcourse.adapters.EffectTool`` (the
  key from the task and the exact arguments, the intent journaled, the
  call probed on resume).

Each tool announces its boundaries (``crashcourse.boundary``) where the
parent holds or kills the process: ``before_request:TOOL`` right before the
request leaves, and ``after_ack:place_order`` (``after_ack:send_confirmation``)
once the supplier answered with the order (the provider accepted the
message), before the tool returns to the framework.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path

from crashcourse.boundary import boundary
from crashcourse.effects import FencingToken
from crashcourse.services import drive, mail, supplier

# The public face (issue 33): what a chapter or an exercise may import.
__all__ = ["KEYS", "TOOLS", "STOCK_SHEET", "SCRIPT", "FINAL", "PROMPT",
    "TASK_PREFIX", "next_turn", "new_call_id", "new_key", "World", "checked_world",
    "agent_parser", "parse_agent", "serve_agent", "build_world", "ShopTools"]

KEYS = ("none", "position", "action")
TOOLS = ("reserve_stock", "place_order", "send_confirmation")
STOCK_SHEET = "stock-flour"  # the drive file that says what is reserved
# The conversation the scripted model follows: one tool call per turn.
SCRIPT = (
    ("reserve_stock", {"sku": "flour-25kg", "quantity": 6}),
    ("place_order", {"sku": "flour-25kg", "quantity": 6, "unit_cents": 2150}),
    ("send_confirmation", {"to": "owner@shop.example",
                           "subject": "flour ordered",
                           "body": "6 sacks of flour-25kg ordered"}),
)
FINAL = "Flour reserved, ordered and confirmed."
PROMPT = "Two sacks of flour left: restock."
TASK_PREFIX = "restock-flour"
# The adapter's lease on one call and the longest its request may take: a
# resume after a kill waits out LEASE_S (chapter 05) before it probes.
LEASE_S, WAIT_S = 4.0, 2.0


def next_turn(results: int) -> tuple[str, dict] | None:
    """The scripted model's next tool call after ``results`` tool results in
    the conversation, or None: it answers in text (chapter 12)."""
    return SCRIPT[results] if results < len(SCRIPT) else None


def new_call_id() -> str:
    """A fresh tool-call id, as a real model mints one for every call."""
    return f"call_{secrets.token_hex(6)}"


def scripted_reply(history: list[dict]) -> dict:
    """The scripted model's next message for ``history``: the next tool call
    of SCRIPT, with a fresh call id, or the final text (chapter 12)."""
    turn = next_turn(sum(m["role"] == "tool" for m in history))
    if turn is None:
        return {"role": "assistant", "content": FINAL, "tool_call": None}
    name, arguments = turn
    return {"role": "assistant", "content": "",
            "tool_call": {"id": new_call_id(), "name": name, "args": arguments}}


def new_key() -> str:
    """The ``none`` policy: a key nobody can compute again."""
    return f"rand-{secrets.token_hex(8)}"


class World:
    """One trial's outside world and names (chapter 12): the drive and mail
    files in ``folder``, the supplier's URL, the trial id (the supplier's
    work id for every order of this trial) and the agent's task."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        spec = json.loads((self.folder / "world.json").read_text())
        self.trial, self.url = spec["trial"], spec["supplier"]
        self.task = f"{TASK_PREFIX}-{self.trial}"
        self.drive = str(self.folder / "drive.sqlite")
        self.mail = str(self.folder / "mail.sqlite")
        self.journal = str(self.folder / "effects.sqlite")  # the adapter's

    def path(self, name: str) -> str:
        """A file of this trial's world, e.g. the framework's own store."""
        return str(self.folder / name)


def checked_world(parser, args):
    """``args``, once its ``--world`` proves to be a built world; else the
    parser's one line, exit 2, before anything runs: a missing folder or
    ``world.json`` was a ``FileNotFoundError`` traceback (issue 35)."""
    try:
        World(args.world)
    except (OSError, ValueError, KeyError, TypeError) as bad:
        parser.error(f"--world {args.world!r} is not a trial's world"
                     f" ({type(bad).__name__}: {bad})")
    return args


def agent_parser(doc: str):
    """The command line every agent starts with (chapter 12): ``--world``
    and ``--key``; parse with ``parse_agent``, which checks the world."""
    from crashcourse.validate import argument_parser

    parser = argument_parser(doc.split("\n\n")[0])
    parser.add_argument("--world", required=True, help="the trial's folder")
    parser.add_argument("--key", choices=KEYS, required=True)
    return parser


def parse_agent(parser, argv: list[str] | None = None):
    """``parser``'s arguments, once ``--world`` proves to be a trial's world."""
    return checked_world(parser, parser.parse_args(argv))


def serve_agent(run, args) -> None:
    """An async agent's start-up: ``run(args)`` to its end, its report (a
    dict) as the last line of stdout, exit 0."""
    import asyncio
    import sys

    print(json.dumps(asyncio.run(run(args))), flush=True)
    sys.exit(0)


def build_world(folder: str | Path, supplier_url: str, trial: str) -> World:
    """A fresh world: the stock sheet on the drive, an empty mail provider,
    the supplier's address (chapter 12)."""
    folder = Path(folder)
    folder.mkdir(parents=True)
    (folder / "world.json").write_text(json.dumps({"trial": trial,
                                                   "supplier": supplier_url}))
    world = World(folder)
    drive.install(world.drive, {STOCK_SHEET: "flour-25kg.csv"})
    mail.install(world.mail)
    return world


class ShopTools:
    """The three tool bodies, bound to one world; each takes its arguments
    and the ``operation_key`` it sends (chapter 12)."""

    def __init__(self, world: World, wait_s: float = WAIT_S) -> None:
        self.world, self.wait_s = world, wait_s  # no request outlives wait_s

    def reserve_stock(self, sku: str, quantity: int, *, operation_key: str) -> dict:
        """Reserve stock for an order: the stock sheet says so (an end state)."""
        boundary("before_request:reserve_stock")
        return drive.rename_to(self.world.drive, STOCK_SHEET,
                               f"{sku}.reserved-{quantity}.csv",
                               operation_key=operation_key)

    def place_order(self, sku: str, quantity: int, unit_cents: int, *,
                    operation_key: str) -> dict:
        """Place the order with the supplier."""
        boundary("before_request:place_order")
        status, answer = supplier.place_order(
            self.world.url, operation_key,
            {"sku": sku, "quantity": quantity, "unit_cents": unit_cents},
            token=FencingToken(self.world.trial, 1), wait_s=self.wait_s)
        if status not in (200, 201):
            raise RuntimeError(f"the supplier refused the order: {status} {answer}")
        boundary("after_ack:place_order")  # acknowledged; the framework knows nothing
        return answer

    def send_confirmation(self, to: str, subject: str, body: str, *,
                          operation_key: str) -> dict:
        """Mail the confirmation (the provider takes no key; the header
        travels so a probe can find the message)."""
        boundary("before_request:send_confirmation")
        answer = mail.submit(self.world.mail, to, subject, body,
                             {mail.KEY_HEADER: operation_key})
        boundary("after_ack:send_confirmation")  # accepted; nobody knows yet
        return answer

    # The probes: did the service get this action? (done, what it shows)

    def reserved(self, sku: str, quantity: int, *, operation_key: str):
        return drive.probe_rename(self.world.drive, STOCK_SHEET,
                                  f"{sku}.reserved-{quantity}.csv")

    def ordered(self, sku: str, quantity: int, unit_cents: int, *,
                operation_key: str):
        status, answer = supplier.get_order(self.world.url, operation_key,
                                            wait_s=self.wait_s)
        return status == 200, answer

    def mailed(self, to: str, subject: str, body: str, *, operation_key: str):
        return mail.probe_sent(self.world.mail, operation_key)

    def probes(self) -> dict:
        return {"reserve_stock": self.reserved, "place_order": self.ordered,
                "send_confirmation": self.mailed}

    def guarded(self, ttl: float = LEASE_S) -> dict:
        """Each tool behind the adapter (the ``action`` policy), by name."""
        from crashcourse.adapters import EffectTool

        probes = self.probes()
        return {name: EffectTool(getattr(self, name), probes[name],
                                 journal_path=self.world.journal,
                                 task=self.world.task, ttl=ttl,
                                 wait_s=self.wait_s)
                for name in TOOLS}

