"""What the supplier accepts at its door, before anything is decided (ch. 06).

One request is read and checked here, and refused with ``Refused`` (an HTTP
status, an error word, a detail) when it is not exactly what the supplier
understands. Nothing is decided from a refused request: no order, no fence.

* The framing: one decimal ``Content-Length`` of at most ``MAX_BODY`` bytes,
  no ``Transfer-Encoding``. A missing length is 411, an invalid one 400 and a
  longer one 413, all before a byte of the body is read.
* The token: ``Idempotency-Key`` and ``X-Work-Id``, each sent ONCE, of 1 to
  ``MAX_KEY`` characters from ``KEY_CHARS`` (letters, digits and ``._~:@+=/-``:
  a key the supplier stores is one a ``GET /orders/{key}`` can name, and no
  control character, space, ``#`` or ``?`` ever reaches the store), and
  ``X-Generation``, sent once (ASCII digits, 1 to 2**63 - 1, the largest
  INTEGER SQLite stores). A header folded over two lines is refused too.
* The proposal: UTF-8 JSON with exactly sku (text), quantity and unit_cents
  (positive ints, bounded): the bytes the client sends, nothing a lenient
  decoder would guess (UTF-16, a BOM).
* Exactly the declared bytes are read (``read_exactly``): a body cut short is
  400; one that stalls past the socket timeout, or is still arriving when the
  request's whole deadline has passed (a byte now and then), 408.
* ``InFlight``: a second request for a key being decided is 409, ask again.
* ``drain``: after an error answer the connection closes; what the caller
  still sends is read and dropped (bounded) so the close does not reset the
  answer away, and none of it is ever read as a request.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from contextlib import contextmanager

# The public face (issue 33): what a chapter or an exercise may import.
__all__ = ["FIELDS", "LIMITS", "MAX_BODY", "MAX_KEY", "MAX_GENERATION",
    "KEY_CHARS", "TOKEN_HEADERS", "Refused", "is_decimal", "usable_key",
    "single_token_headers", "body_length", "no_body", "read_exactly", "InFlight",
    "drain", "named_token", "parse_token", "parse_generation", "parse_proposal"]

FIELDS = {"sku": str, "quantity": int, "unit_cents": int}
LIMITS = {"quantity": 10_000, "unit_cents": 10**9}
MAX_BODY = 16 * 1024  # a proposal is under 200 bytes: more is a mistake or a probe
MAX_KEY = 200  # characters in an operation key or a work id
MAX_GENERATION = 2**63 - 1
KEY_CHARS = re.compile(r"[A-Za-z0-9._~:@+=/-]+")  # round-trips in a URL path
TOKEN_HEADERS = ("Idempotency-Key", "X-Work-Id", "X-Generation")
LINGER_S, LINGER_BYTES = 1.0, 1 << 20  # drained after an error answer, at most


class Refused(ValueError):
    """A request answered without a decision: ``status`` (400 unless said),
    ``error`` and a detail; ``retry`` adds Retry-After (chapter 06)."""

    def __init__(self, detail: str, status: int = 400, error: str = "bad_request",
                 *, retry: bool = False) -> None:
        super().__init__(detail)
        self.status, self.error, self.retry = status, error, retry

    def body(self) -> dict:
        """The JSON answer: the error word and what was wrong."""
        return {"error": self.error, "detail": str(self)}


def is_decimal(text: str) -> bool:
    """ASCII digits only, at most 19 of them: ``'²'`` passes ``str.isdigit``
    and ``int`` refuses it, so it is refused here first (chapter 06)."""
    return text.isascii() and text.isdigit() and len(text) <= 19


def usable_key(value: str | None) -> str | None:
    """A value that can name something: 1 to ``MAX_KEY`` characters of
    ``KEY_CHARS``, so a GET can name it again (chapter 06)."""
    if value is None or len(value) > MAX_KEY or not KEY_CHARS.fullmatch(value):
        return None
    return value


def single_token_headers(headers) -> None:
    """Each token header at most once, never folded over two lines: the first
    of two keys silently winning is how two requests become one (ch. 06)."""
    for name in TOKEN_HEADERS:
        values = headers.get_all(name) or []
        if len(values) > 1:
            raise Refused(f"{name} must be sent once, got {len(values)}")
        if values and any(char in values[0] for char in "\r\n"):
            raise Refused(f"{name} must be one line (no folded header)")


def body_length(headers) -> int:
    """The one ``Content-Length`` a POST declares, before its body is read (ch. 06)."""
    lengths = [value.strip() for value in headers.get_all("Content-Length") or []]
    if headers.get("Transfer-Encoding") is not None or not lengths:
        raise Refused("send one Content-Length and no Transfer-Encoding", 411,
                      "length_required")
    if len(lengths) > 1 or not is_decimal(lengths[0]):
        raise Refused("Content-Length must be one decimal number")
    if int(lengths[0]) > MAX_BODY:
        raise Refused(f"a body is at most {MAX_BODY} bytes", 413, "too_large")
    return int(lengths[0])


def no_body(headers) -> None:
    """A GET declares no body: its bytes would be read as a request (ch. 06)."""
    if (headers.get("Content-Length", "0").strip() != "0"
            or headers.get("Transfer-Encoding") is not None):
        raise Refused("a GET carries no body")


def read_exactly(rfile, length: int, connection: socket.socket | None = None,
                 deadline_s: float | None = None) -> bytes:
    """Exactly ``length`` bytes from ``rfile``, or Refused (chapter 06).

    With ``connection`` and ``deadline_s``, the whole body must arrive within
    ``deadline_s``: each wait is cut to what is left, so a caller trickling a
    byte just inside the socket timeout cannot hold a thread for ever."""
    paced = connection is not None and deadline_s is not None
    body, ends = b"", time.monotonic() + (deadline_s or 0.0)
    before = connection.gettimeout() if paced else None
    try:
        while len(body) < length:
            try:
                if paced:  # one receive at a time, each cut to what is left
                    left = ends - time.monotonic()
                    if left <= 0:
                        raise TimeoutError
                    connection.settimeout(left)
                    chunk = rfile.read1(length - len(body))
                else:
                    chunk = rfile.read(length - len(body))
            except TimeoutError:  # the socket timeout or the deadline: stalled
                raise Refused(f"body stalled after {len(body)} of {length} bytes",
                              408, "timeout") from None
            if not chunk:  # the caller closed before it sent what it declared
                raise Refused(f"body ended after {len(body)} of {length} bytes")
            body += chunk
    finally:
        if paced:
            connection.settimeout(before)
    return body


class InFlight:
    """The operation keys whose request is being decided now (chapter 06)."""

    def __init__(self) -> None:
        self.keys: set[str] = set()
        self.lock = threading.Lock()

    @contextmanager
    def holding(self, operation_key: str):
        """Hold ``operation_key`` for the block; if another request holds it,
        Refused 409 ``in_flight`` with Retry-After (the draft's answer)."""
        with self.lock:
            if operation_key in self.keys:
                raise Refused("a request with this key is being decided", 409,
                              "in_flight", retry=True)
            self.keys.add(operation_key)
        try:
            yield
        finally:
            with self.lock:
                self.keys.discard(operation_key)


def drain(connection: socket.socket) -> None:
    """Stop writing, then read and drop what the caller still sends, bounded
    in time and bytes, so the close that follows resets nothing (ch. 06)."""
    deadline, drained = time.monotonic() + LINGER_S, 0
    try:
        connection.shutdown(socket.SHUT_WR)
        connection.settimeout(LINGER_S)
        while drained < LINGER_BYTES and time.monotonic() < deadline:
            chunk = connection.recv(65536)
            if not chunk:
                break
            drained += len(chunk)
    except OSError:  # reset or timed out: the answer went out first
        pass


def named_token(headers) -> tuple[str | None, str | None, int | None]:
    """Idempotency-Key, X-Work-Id, X-Generation: each if usable, else None.

    A refused request is logged with what it named (chapter 06)."""
    if any(len(headers.get_all(name) or []) > 1 for name in TOKEN_HEADERS):
        return None, None, None  # which of two keys? neither is logged
    generation = headers.get("X-Generation", "")
    generation = int(generation) if is_decimal(generation) else 0
    return (usable_key(headers.get("Idempotency-Key")),
            usable_key(headers.get("X-Work-Id")),
            generation if 1 <= generation <= MAX_GENERATION else None)


def parse_token(headers) -> tuple[str, str, int]:
    """Idempotency-Key, X-Work-Id and X-Generation, each once and usable
    (chapter 06)."""
    single_token_headers(headers)
    token = named_token(headers)
    if None in token:
        raise Refused(f"Idempotency-Key and X-Work-Id (1 to {MAX_KEY} of"
                      f" {KEY_CHARS.pattern}) and X-Generation (1 to"
                      f" {MAX_GENERATION}) required")
    return token


def parse_generation(headers) -> int:
    """``X-Generation`` alone, sent once and usable: a fence names its work
    in the path and carries no operation key (chapters 06, 08)."""
    single_token_headers(headers)
    generation = named_token(headers)[2]
    if generation is None:
        raise Refused(f"X-Generation (1 to {MAX_GENERATION}) required")
    return generation


def parse_proposal(body: bytes) -> dict:
    """Exactly sku (text), quantity and unit_cents (positive, bounded), as
    UTF-8 JSON (chapter 06)."""
    try:
        proposal = json.loads(body.decode("utf-8"))
    except (ValueError, RecursionError):  # not UTF-8, garbled, or too deep
        raise Refused("body is not UTF-8 JSON") from None
    if not isinstance(proposal, dict) or set(proposal) != set(FIELDS):
        raise Refused(f"body must have exactly {sorted(FIELDS)}")
    for name, kind in FIELDS.items():
        value = proposal[name]
        if isinstance(value, bool) or not isinstance(value, kind):
            raise Refused(f"{name} must be {kind.__name__}")
        if kind is int and not 0 < value <= LIMITS[name]:
            raise Refused(f"{name} out of range")
        if kind is str and not value.strip():
            raise Refused(f"{name} must not be empty")
    return proposal
