"""Turn admission: who holds the boundary before the next ordinary turn.

Right of way is decided synchronously: a waking send schedules its claim
with `call_soon`, and from the moment it is accepted it owns the next turn,
even though the claim has not run yet. `reserve_turn_admission()` is the
only other way to hold that boundary, and it never creates a second queue.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from engine.driver.inbox_item import InboxItem
from engine.driver.state import DriverState


class Admission(DriverState):
    """The claim that starts a turn, the reservation that withholds it, and idleness."""

    # -- admission -----------------------------------------------------------

    def _arm(self) -> None:
        if self._closed or self._turn_task is not None or self._claim is not None:
            return
        if self._reservation is not None or not self._has_waking():
            return
        self._claim = asyncio.get_running_loop().call_soon(self._run_claim)

    def _run_claim(self) -> None:
        self._claim = None
        if self._closed or self._turn_task is not None or self._reservation is not None:
            self._changed()
            return
        takeable = self._takeable()
        cut = next((i for i, item in enumerate(takeable) if item.waking), None)
        if cut is None:
            self._changed()
            return
        if takeable[0].restored:  # a prompt left queued at the last quit: a turn of its own
            cut = 0
        items, self._inbox = self._inbox[: cut + 1], self._inbox[cut + 1 :]
        task = asyncio.get_running_loop().create_task(self._turn(items))
        task.add_done_callback(lambda done: self._never_started(done, items))
        self._turn_task = task
        self._changed()

    def _never_started(self, task: asyncio.Task[None], items: list[InboxItem]) -> None:
        """A turn cancelled before its first step never runs its clean-up: what it took
        from the queue goes back, quiet, and the driver is free again. A turn that ran
        cleared `_turn_task` itself."""
        if self._turn_task is not task:
            return
        self._turn_task = None
        self._running_turn = None
        returned = [InboxItem(i.id, i.text, False, i.placement, i.restored) for i in items]
        self._inbox = sorted([*returned, *self._inbox], key=lambda item: item.id)
        self._arm()
        self._changed()

    def reserve_turn_admission(self) -> Callable[[], None] | None:
        """Claim the boundary before the next ordinary turn, synchronously.

        Refused while a turn runs, while another reservation exists, or
        while an accepted waking item owns the next turn, including one
        whose claim is scheduled but has not run in this tick.
        """
        if self._closed or self._turn_task is not None or self._reservation is not None:
            return None
        if self._claim is not None or self._has_waking():
            return None
        token = object()
        self._reservation = token

        def release() -> None:
            if self._reservation is not token:
                return
            self._reservation = None
            self._arm()
            self._changed()

        self._changed()
        return release

    async def when_idle(self) -> None:
        """Resolve when no turn, claim, reservation or waking input remains."""
        while True:
            await self._idle.wait()
            if self._is_idle() or self._closed:
                return

    # -- teardown ------------------------------------------------------------

    def close_admission(self) -> None:
        """No new turn starts from here on (shutdown): queued input stays queued."""
        self._closed = True
        if self._claim is not None:
            self._claim.cancel()
            self._claim = None
