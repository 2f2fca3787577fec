"""The driver: a FIFO inbox of user input, turn admission, and the turn loop.

Every accepted input gets a stable InboxItemId and an `inbox/queued` event,
so a prompt typed while something else runs keeps its identity and its
place, and survives a crash. Right of way to the next turn is decided
synchronously: a waking send schedules its claim with `call_soon`, and from
the moment it is accepted it owns the next turn, even though the claim has
not run yet. `reserve_turn_admission()` is the only other way to hold that
boundary, and it never creates a second queue.

Rooms: `inbox_item` (the item and its id), `inbox` (send, inject, edit,
remove, restore after a crash), `admission` (the claim, the reservation,
idleness), `turn_loop` (one turn and its tool rounds), `ports` (model,
hooks, extension, observers), `state` (what they share), `driver` (the assembled
Driver). Import from `engine.driver`; the rooms are its implementation.
"""

from engine.driver.driver import Driver
from engine.driver.inbox import DriverClosedError
from engine.driver.inbox_item import InboxItem, InboxItemId, Placement
from engine.driver.ports import (
    ContextBuilder,
    Extension,
    ModelPort,
    Observer,
    TurnAgent,
    TurnHooks,
)
from engine.driver.turn_loop import DEFAULT_MAX_TOOL_ROUNDS

__all__ = [
    "DEFAULT_MAX_TOOL_ROUNDS",
    "ContextBuilder",
    "Driver",
    "DriverClosedError",
    "Extension",
    "InboxItem",
    "InboxItemId",
    "ModelPort",
    "Observer",
    "Placement",
    "TurnAgent",
    "TurnHooks",
]
