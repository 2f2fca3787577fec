"""A request's body as bytes, encoded here rather than by the SDK.

The SDK encodes a request's JSON in one call on the event loop, a stall that
grows with the history sent (bench/request_cost.py). Here the history is
encoded a message at a time with orjson, and the loop gets a turn after every
`SLICE_BYTES` of output, so a long thread's request costs a keystroke nothing.
A value orjson refuses (a lone surrogate in a pasted string, an integer past
64 bits) is encoded by the standard library instead, as the SDK would have.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

import orjson

SLICE_BYTES = 256 * 1024
"""Bytes of encoded history after which the event loop gets a turn."""

_OPTIONS = orjson.OPT_NON_STR_KEYS


def dumps(value: Any) -> bytes:
    """One JSON value as bytes: orjson, or the standard library where orjson refuses it."""
    try:
        return orjson.dumps(value, option=_OPTIONS)
    except orjson.JSONEncodeError:
        return json.dumps(value).encode()


async def encode_body(body: Mapping[str, Any]) -> bytes:
    """``body`` as JSON bytes; its ``messages`` list encoded in slices, with turns between."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        return dumps(dict(body))
    parts = [b'{"messages":[']
    since_turn = 0
    for n, message in enumerate(messages):
        piece = dumps(message)
        if n:
            parts.append(b",")
        parts.append(piece)
        since_turn += len(piece)
        if since_turn >= SLICE_BYTES:
            since_turn = 0
            await asyncio.sleep(0)
    rest = {key: value for key, value in body.items() if key != "messages"}
    parts.append(b"]," + dumps(rest)[1:] if rest else b"]}")
    return b"".join(parts)
