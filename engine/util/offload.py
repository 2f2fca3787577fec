"""Blocking work (fsync, SQLite) off the event loop, drained on cancel.

`asyncio.to_thread` alone lets a cancelled caller return while its thread
still writes; these helpers wait for the thread before re-raising, so a
cancellation never returns with disk work half done behind it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import ParamSpec, TypeVar

T = TypeVar("T")
P = ParamSpec("P")


async def run_drained(fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    future = asyncio.ensure_future(asyncio.to_thread(fn, *args, **kwargs))
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        # Let the thread finish (its own errors belong to nobody now), then
        # hand the exact cancellation back to the caller.
        await asyncio.wait([future])
        if not future.cancelled():
            future.exception()
        raise
