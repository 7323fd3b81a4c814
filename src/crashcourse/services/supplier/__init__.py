"""Calling the supplier by its URL, as every service is called (chapter 08).

The supplier (``crashcourse.services.supplier.server``) is a separate process; these
functions are its address book entries: each sends one request carrying the
operation key (``Idempotency-Key``) and the fencing token (``X-Work-Id``,
``X-Generation``) and returns ``(status, answer)``. A network failure (no
answer, a reset, a timeout) raises ``OSError``: the request may or may not
have reached the supplier, and only a later ``get_order`` can tell.

An answer that decides nothing raises ``NotDecided``, an ``OSError`` too, so
no caller can mistake it for a final refusal: 503 (the supplier's store is
busy or down), 409 ``in_flight`` (a request with the same key is still being
decided), 408, 429 and any other 5xx. Ask again later, after a lookup.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request

from crashcourse.effects import FencingToken

# The public face (issue 33): what a chapter or an exercise may import.
__all__ = ["WAIT_S", "NotDecided", "undecided", "parsed", "exchange", "headers",
    "place_order", "get_order", "release_order", "fence_work", "process",
    "request", "store"]

WAIT_S = 5.0  # generous: the supplier shares two loaded cores with the workers


class NotDecided(OSError):
    """The supplier answered without deciding: try again later (chapter 06).

    ``status``, the JSON ``answer`` and ``retry_after`` (seconds, or None)."""

    def __init__(self, status: int, answer: dict, retry_after: str | None) -> None:
        super().__init__(f"the supplier decided nothing ({status}): {answer}")
        self.status, self.answer = status, answer
        seconds = retry_after or ""
        self.retry_after = float(seconds) if seconds.isascii() and seconds.isdigit() \
            else None


def undecided(status: int, answer: dict | None) -> bool:
    """Whether an answer leaves the request undecided (chapter 06)."""
    return (status >= 500 or status in (408, 429)
            or (status == 409 and (answer or {}).get("error") == "in_flight"))


def parsed(raw: bytes) -> dict | None:
    """The JSON of an error answer, or None when it is not JSON (chapter 06)."""
    try:
        answer = json.loads(raw or b"{}")
    except ValueError:
        return None
    return answer if isinstance(answer, dict) else None


def exchange(request: urllib.request.Request, wait_s: float) -> tuple[int, dict]:
    """One HTTP exchange: (status, JSON answer); ``OSError`` if none, and
    ``NotDecided`` if the answer decided nothing (chapters 06, 08)."""
    try:
        with urllib.request.urlopen(request, timeout=wait_s) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as refused:  # an answer, only not a 2xx
        status, answer = refused.code, parsed(refused.read())
        if undecided(status, answer):
            raise NotDecided(status, answer or {},
                             refused.headers.get("Retry-After")) from None
        if answer is None:  # garbled: as good as no answer
            raise ValueError(f"the supplier's {status} answer is not JSON") from None
        return status, answer


def headers(operation_key: str, token: FencingToken) -> dict:
    """The request's headers: its operation key and its fencing token, the
    token spelled as ``X-Work-Id`` and ``X-Generation`` (chapter 08)."""
    return {"Content-Type": "application/json", "Idempotency-Key": operation_key,
            "X-Work-Id": token.work, "X-Generation": str(token.generation)}


def place_order(url: str, operation_key: str, proposal: dict, *,
                token: FencingToken, wait_s: float = WAIT_S) -> tuple[int, dict]:
    """``POST /orders``: reserve ``proposal`` (sku, quantity, unit_cents)
    under ``operation_key`` and ``token`` (chapter 08)."""
    return exchange(urllib.request.Request(
        f"{url}/orders", method="POST", data=json.dumps(proposal).encode(),
        headers=headers(operation_key, token)), wait_s)


def get_order(url: str, operation_key: str,
              wait_s: float = WAIT_S) -> tuple[int, dict]:
    """``GET /orders/{key}``: 200 with the order, or 404 (chapter 08)."""
    return exchange(urllib.request.Request(f"{url}/orders/{operation_key}"), wait_s)


def release_order(url: str, order_key: str, operation_key: str, *,
                  token: FencingToken, wait_s: float = WAIT_S) -> tuple[int, dict]:
    """``POST /orders/{order_key}/release`` under the release's OWN
    ``operation_key``: 201 released, 200 the same release again (chapter 08)."""
    return exchange(urllib.request.Request(
        f"{url}/orders/{order_key}/release", method="POST", data=b"",
        headers=headers(operation_key, token)), wait_s)


def fence_work(url: str, token: FencingToken, wait_s: float = WAIT_S) -> int:
    """``POST /work/{work}/fence``: a cancel reaching the supplier; the
    work's fence now (chapters 06, 08). Once this returns, the supplier
    refuses every order and release of ``token.work`` below
    ``token.generation`` (412); ``OSError`` (``NotDecided`` among them) if
    that is not known."""
    work, generation = token
    status, answer = exchange(urllib.request.Request(
        f"{url}/work/{work}/fence", method="POST", data=b"",
        headers={"X-Generation": str(generation)}), wait_s)
    if status != 200 or not answer.get("generation", 0) >= generation:
        raise ValueError(f"the supplier answered a fence with {status}: {answer}")
    return answer["generation"]
