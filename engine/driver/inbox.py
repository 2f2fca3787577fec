"""The FIFO inbox: accepting, editing, withdrawing and restoring user input.

Every accepted input gets a stable InboxItemId and an `inbox/queued` event
before `send` returns, so a prompt typed while something else runs keeps its
identity and its place, and survives a crash.
"""

from __future__ import annotations

from engine.driver.inbox_item import InboxItem, InboxItemId, Placement
from engine.driver.state import DriverState
from engine.errors import TroveError
from engine.events import (
    InboxEdited,
    InboxQueued,
    InboxRemoved,
    InboxRestored,
    SessionRewind,
    UserMessage,
)

UNDO_DEPTH = 8
"""Removed items `restore` can still put back, newest kept."""


class DriverClosedError(TroveError, RuntimeError):
    """Input after teardown has nowhere to go; the caller must keep it."""


class Inbox(DriverState):
    """The driver's input side: `send`, `inject`, `remove`, `edit`."""

    # -- input ---------------------------------------------------------------

    def send(
        self, text: str, *, waking: bool = True, placement: Placement = "follow-up"
    ) -> InboxItemId:
        """Accept input; it is durable and has its id before this returns.

        Next-step input steers the running turn when the driver accepts it;
        otherwise it becomes an ordinary follow-up with the same id. When the
        log cannot take it (LogWriteError: disk full, read-only view) nothing
        was accepted and the caller still holds the text.
        """
        if self._closed:
            raise DriverClosedError("the session is closed; input was not accepted")
        event = self.log.append(InboxQueued(text=text, waking=waking, placement=placement))
        item = InboxItem(InboxItemId(event.seq), text, waking, placement)
        if placement == "next-step" and self.accepts_next_step:
            self._steering.append(item)
        else:
            self._inbox.append(item)
        if waking:
            self._arm()
        self._changed()
        return item.id

    def resend(self, after: int, prompt: int, text: str) -> InboxItemId | None:
        """`/edit` sent: the thread goes on after event `after` (just before the prompt of
        the turn at seq `prompt`), with `text` queued there in its place. One line, the
        rewind carrying the text (`SessionRewind.resend`), fsynced before this returns:
        a kill leaves the old exchange or the new line with the text queued, never the
        rewind alone. None (nothing written): the boundary is not free (a turn, a claim,
        a reservation or a waiting prompt holds it). LogWriteError (nothing changed):
        the log cannot take it."""
        if self._closed:
            raise DriverClosedError("the session is closed; input was not accepted")
        if self._turn_task is not None or self._claim is not None:
            return None
        if self._reservation is not None or self._inbox or self._steering:
            return None
        event = self.log.append(SessionRewind(after=after, prompt=prompt, resend=text))
        self.log.flush()
        item = InboxItem(InboxItemId(event.seq), text, True, "follow-up")
        self._inbox.append(item)
        self._arm()
        self._changed()
        return item.id

    def inject(self, text: str) -> int:
        """Durable context that never wakes the driver and is never withheld."""
        if self._closed:
            raise DriverClosedError("the session is closed; context was not accepted")
        event = self.log.append(UserMessage(text=text, source="inject"))
        self._changed()
        return event.seq

    def remove(self, item_id: InboxItemId) -> InboxItem | None:
        """Withdraw a queued item before it starts; it stays in the log as removed.

        Returns the item withdrawn (for the front end to name, and `restore` to
        put back), or None when it is no longer queued."""
        for queue in (self._inbox, self._steering):
            for item in queue:
                if item.id == item_id:
                    self.log.append(InboxRemoved(item_id=item_id))
                    queue.remove(item)
                    item.held = False
                    self._removed[item_id] = item
                    while len(self._removed) > UNDO_DEPTH:
                        del self._removed[next(iter(self._removed))]
                    self._arm()  # a held item removed no longer blocks the queue
                    self._changed()
                    return item
        return None

    def restore(self, item_id: InboxItemId) -> bool:
        """Undo `remove`: the item is queued again with its id, text and place."""
        item = self._removed.get(item_id)
        if item is None or self._closed:
            return False
        self.log.append(InboxRestored(item_id=item_id, text=item.text, placement=item.placement))
        del self._removed[item_id]
        self._inbox = sorted([*self._inbox, item], key=lambda queued: queued.id)
        if item.waking:
            self._arm()
        self._changed()
        return True

    def hold(self, item_id: InboxItemId) -> InboxItem | None:
        """Keep a queued item, and everything behind it, from being taken while a front
        end edits it; `edit` or `release` ends the hold. None: it is no longer queued."""
        for item in self.inbox:
            if item.id == item_id:
                item.held = True
                self._changed()
                return item
        return None

    def release(self, item_id: InboxItemId) -> None:
        """End a hold without changing the item (the edit was dropped)."""
        for item in self.inbox:
            if item.id == item_id and item.held:
                item.held = False
                self._arm()
                self._changed()

    def edit(self, item_id: InboxItemId, text: str) -> bool:
        """Change a queued item's text and end its hold; its id and place are kept.

        False: the item was taken or removed before the edit was saved."""
        for item in self.inbox:
            if item.id == item_id:
                self.log.append(InboxEdited(item_id=item_id, text=text))
                item.text = text
                item.held = False
                self._arm()
                self._changed()
                return True
        return False

    def _restore_inbox(self) -> None:
        """Input accepted before a crash but never delivered comes back, quiet.

        It is not run automatically: the user sees it queued and decides. Once the
        next prompt is sent, each runs first, as its own turn (`Admission`).
        Synchronous in the driver's constructor, so no turn can start before
        the queue is known; the log keeps what is still queued as it replays and
        appends (`LineState.pending`, engine.log.state), so this reads no events.
        """
        pending = self.log.state.pending
        self._inbox = [
            InboxItem(InboxItemId(item_id), pending[item_id], False, "follow-up", True)
            for item_id in sorted(pending)
        ]
