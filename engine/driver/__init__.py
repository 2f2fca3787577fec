"""The driver: a FIFO inbox of user input, turn admission, and the turn loop.

Every accepted input gets a stable InboxItemId and an `inbox/queued` event, so a
prompt typed while something runs keeps its identity and place, and survives a
crash. Right of way to the next turn is decided synchronously: a waking send owns
the next turn from the moment it is accepted, though its claim runs later;
`reserve_turn_admission()` is the only other way to hold that boundary.

Rooms: `inbox_item`, `inbox` (send, inject, edit, remove, restore), `admission`,
`turn_loop` (one turn and its tool rounds), `ports` (model, hooks, extension,
observers), `state`, `driver`. Import from `engine.driver`.
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
