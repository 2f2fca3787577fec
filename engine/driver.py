"""The driver: a FIFO inbox of user input, turn admission, and the turn loop.

Every accepted input gets a stable InboxItemId and an `inbox/queued` event,
so a prompt typed while something else runs keeps its identity and its
place, and survives a crash. Right of way to the next turn is decided
synchronously: a waking send schedules its claim with `call_soon`, and from
the moment it is accepted it owns the next turn, even though the claim has
not run yet. `reserve_turn_admission()` is the only other way to hold that
boundary, and it never creates a second queue.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NewType, Protocol

from engine.events import (
    AssistantMessage,
    InboxEdited,
    InboxQueued,
    InboxRemoved,
    ToolCall,
    ToolResult,
    TurnEnd,
    TurnStart,
    UserMessage,
)
from engine.log import LogWriteError, SessionLog
from engine.model import ContextOverflowError, ModelError
from engine.surface import Message, Surface
from engine.tools import ToolBox, error_result

InboxItemId = NewType("InboxItemId", int)
DEFAULT_MAX_TOOL_ROUNDS = 16
"""Rounds of tool calls one turn may run (``model.max_tool_rounds`` sets it)."""
Placement = Literal["follow-up", "next-step"]


class DriverClosedError(RuntimeError):
    """Input after teardown has nowhere to go; the caller must keep it."""


@dataclass
class InboxItem:
    id: InboxItemId
    text: str
    waking: bool
    placement: Placement


class ModelPort(Protocol):
    """What the driver needs from a model client (engine.model.ModelClient)."""

    async def complete(
        self,
        messages: list[Message],
        *,
        tools: list[dict[str, Any]] | None = None,
        on_delta: Callable[[str], None] | None = None,
        model: str | None = None,
    ) -> Any: ...


class TurnHooks(Protocol):
    """Where compaction plugs into a turn without the driver knowing how."""

    async def before_request(self, driver: Driver, turn: int) -> None: ...

    async def on_overflow(self, driver: Driver, turn: int) -> bool: ...


class Observer(Protocol):
    """A front end following the driver. Its failures never reach a turn."""

    def on_delta(self, turn: int, text: str) -> None: ...

    def on_state(self) -> None: ...

    def on_failure(self, text: str) -> None:
        """A failure the log could not record (it could not be written); one line."""


ContextBuilder = Callable[[list[Message]], Awaitable[list[Message]]]


class Driver:
    """Owns the inbox and runs one turn at a time over a session log."""

    def __init__(
        self,
        log: SessionLog,
        model: ModelPort,
        *,
        tools: ToolBox | None = None,
        system_prompt: str = "",
        hooks: TurnHooks | None = None,
        context: ContextBuilder | None = None,
        max_tool_rounds: int = DEFAULT_MAX_TOOL_ROUNDS,
        surface: Surface | None = None,
        observers: Sequence[Observer] = (),
    ) -> None:
        """`surface` is the log's surface when something built before the driver (the
        continuity context) must share it; it is built from the log otherwise."""
        self.log = log
        self.model = model
        self.tools = tools or ToolBox()
        self.system_prompt = system_prompt
        self.hooks = hooks
        self.context = context
        self.max_tool_rounds = max_tool_rounds
        self.surface = surface if surface is not None else Surface.from_events(log.events)
        log.projections.insert(0, self.surface.apply)
        self.observers: list[Observer] = list(observers)
        self._inbox: list[InboxItem] = []
        self._steering: list[InboxItem] = []
        self._claim: asyncio.Handle | None = None
        self._reservation: object | None = None
        self._turn_task: asyncio.Task[None] | None = None
        self._running_turn: int | None = None
        self._partial: list[str] = []
        self._idle = asyncio.Event()
        self._closed = False
        self._restore_inbox()
        self._update_idle()

    # -- state ---------------------------------------------------------------

    @property
    def running_turn(self) -> int | None:
        return self._running_turn

    @property
    def accepts_next_step(self) -> bool:
        """Steering goes into a running turn only; a reservation has none."""
        return self._turn_task is not None and not self._turn_task.done()

    @property
    def reserved(self) -> bool:
        return self._reservation is not None

    @property
    def inbox(self) -> list[InboxItem]:
        """Queued items in FIFO order (steering waiting for the next request first)."""
        return [*self._steering, *self._inbox]

    @property
    def partial_reply(self) -> str:
        return "".join(self._partial)

    def _has_waking(self) -> bool:
        return any(item.waking for item in self._inbox)

    def _is_idle(self) -> bool:
        return (
            self._turn_task is None
            and self._claim is None
            and self._reservation is None
            and not self._has_waking()
        )

    def _update_idle(self) -> None:
        if self._is_idle() or self._closed:
            self._idle.set()
        else:
            self._idle.clear()

    def _changed(self) -> None:
        self._update_idle()
        self._tell("on_state")

    def _tell(self, method: str, *args: Any) -> None:
        """Call every observer; one that raises is reported and skipped, never raised here."""
        for observer in list(self.observers):
            callback = getattr(observer, method, None)
            if callback is None:
                continue
            try:
                callback(*args)
            except Exception as exc:
                logging.getLogger("trove").warning(
                    "observer %r failed in %s: %s: %s", observer, method, type(exc).__name__, exc
                )

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

    def inject(self, text: str) -> int:
        """Durable context that never wakes the driver and is never withheld."""
        if self._closed:
            raise DriverClosedError("the session is closed; context was not accepted")
        event = self.log.append(UserMessage(text=text, source="inject"))
        self._changed()
        return event.seq

    def remove(self, item_id: InboxItemId) -> bool:
        """Withdraw a queued item before it starts; it stays in the log as removed."""
        for queue in (self._inbox, self._steering):
            for item in queue:
                if item.id == item_id:
                    self.log.append(InboxRemoved(item_id=item_id))
                    queue.remove(item)
                    self._changed()
                    return True
        return False

    def edit(self, item_id: InboxItemId, text: str) -> bool:
        """Change a queued item's text; its id and place are kept."""
        for item in self.inbox:
            if item.id == item_id:
                self.log.append(InboxEdited(item_id=item_id, text=text))
                item.text = text
                self._changed()
                return True
        return False

    def _restore_inbox(self) -> None:
        """Input accepted before a crash but never delivered comes back, quiet.

        It is not run automatically: the user sees it queued and decides.
        """
        pending: dict[int, InboxItem] = {}
        for event in self.log.events:
            if isinstance(event, InboxQueued):
                item_id = InboxItemId(event.seq)
                pending[item_id] = InboxItem(item_id, event.text, False, "follow-up")
            elif isinstance(event, InboxEdited) and event.item_id in pending:
                pending[event.item_id].text = event.text
            elif isinstance(event, InboxRemoved | UserMessage) and event.item_id is not None:
                pending.pop(event.item_id, None)
        self._inbox = list(pending.values())

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
        cut = next((i for i, item in enumerate(self._inbox) if item.waking), None)
        if cut is None:
            self._changed()
            return
        items, self._inbox = self._inbox[: cut + 1], self._inbox[cut + 1 :]
        self._turn_task = asyncio.get_running_loop().create_task(self._turn(items))
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

    # -- turns ---------------------------------------------------------------

    def cancel(self) -> bool:
        """Stop the running turn; its partial reply is kept, marked cancelled."""
        if self._turn_task is None or self._turn_task.done():
            return False
        self._turn_task.cancel("cancelled by the user")
        return True

    async def request_messages(self) -> list[Message]:
        messages: list[Message] = []
        if self.system_prompt:
            messages.append({"role": "system", "content": self.system_prompt})
        messages.extend(self.surface.messages())
        if self.context is not None:
            messages = await self.context(messages)
        return messages

    def _deliver_steering(self) -> None:
        while self._steering:
            item = self._steering[0]
            self.log.append(UserMessage(text=item.text, item_id=item.id, placement="next-step"))
            self._steering.pop(0)

    async def _request(self, turn: int) -> Any:
        if self.hooks is not None:
            await self.hooks.before_request(self, turn)

        def on_delta(text: str) -> None:
            self._partial.append(text)
            self._tell("on_delta", turn, text)

        tools = self.tools.schemas() or None

        async def attempt() -> Any:
            self._partial = []
            return await self.model.complete(
                await self.request_messages(), tools=tools, on_delta=on_delta
            )

        try:
            return await attempt()
        except ContextOverflowError:
            if self.hooks is None or not await self.hooks.on_overflow(self, turn):
                raise
        return await attempt()  # once, on the compacted surface

    async def _turn(self, items: list[InboxItem]) -> None:
        """One turn. Whatever fails (the model, a tool, the disk), it ends with the
        driver idle again, and input whose message never reached the log is
        queued again (quietly), so nothing typed is lost."""
        turn = self.log.tail.last_turn + 1
        self._running_turn = turn
        status, error, reason = "ok", None, None
        started = False
        delivered: set[int] = set()
        pending_calls: list[Any] = []
        rounds = 0
        try:
            self.log.append(TurnStart(turn=turn, items=[item.id for item in items]))
            started = True
            for item in items:
                self.log.append(UserMessage(text=item.text, item_id=item.id))
                delivered.add(item.id)
            while True:
                self._deliver_steering()
                completion = await self._request(turn)
                self._partial = []
                calls = list(completion.tool_calls)
                self.log.append(
                    AssistantMessage(
                        content=completion.content,
                        tool_calls=[ToolCall(c.id, c.name, c.arguments) for c in calls],
                        usage=completion.usage,
                        model=completion.model,
                        finish_reason=completion.finish_reason,
                    )
                )
                if calls and rounds >= self.max_tool_rounds:
                    # A model that never stops calling tools would keep the turn (and
                    # the queue behind it) busy forever. Its last calls still get a
                    # result each, so the conversation stays valid for the next request.
                    status, reason = "error", "tool_rounds"
                    error = (
                        f"stopped after {rounds} round{'' if rounds == 1 else 's'}"
                        " of tool calls in one turn"
                        " (model.max_tool_rounds): the model kept calling tools"
                    )
                    for call in calls:
                        content = error_result("tool_round_limit", f"not run: {error}")
                        self.log.append(
                            ToolResult(call_id=call.id, name=call.name, content=content)
                        )
                    break
                rounds += bool(calls)
                pending_calls = list(calls)
                while pending_calls:
                    call = pending_calls[0]
                    content = await self.tools.call(call.name, call.arguments)
                    self.log.append(ToolResult(call_id=call.id, name=call.name, content=content))
                    pending_calls.pop(0)
                if not calls and not self._steering:
                    break
        except asyncio.CancelledError:
            status = "cancelled"
            if started:
                self._close_interrupted(pending_calls, "error: cancelled", cancelled=True)
        except LogWriteError as exc:
            status, error = "error", f"the turn stopped: {exc}"
        except ModelError as exc:
            # A stream that failed mid-reply keeps what the user already saw,
            # marked like a cancelled one.
            status, error, reason = "error", str(exc), exc.kind
            if started:
                self._close_interrupted(pending_calls, f"error: {error}")
        except Exception as exc:
            status, error = "error", f"{type(exc).__name__}: {exc}"
            if started:
                self._close_interrupted(pending_calls, f"error: {error}")
        finally:
            self._partial = []
            if started:
                end = TurnEnd(turn=turn, status=status, error=error, reason=reason)
                failed = self._try_append(end)
                if failed is not None:  # the log cannot say it, so say it here, once
                    self._tell(
                        "on_failure", error or f"the end of the turn was not recorded: {failed}"
                    )
            elif error is not None:
                self._tell("on_failure", error)
            self._running_turn = None
            # Input that never became a message goes back to the queue, quiet: it
            # is still in the log as queued, and the user decides when to resend.
            returned = [
                InboxItem(item.id, item.text, False, item.placement)
                for item in items
                if item.id not in delivered
            ]
            # Steering that arrived too late for this turn becomes a follow-up.
            self._inbox = sorted(
                [*returned, *self._steering, *self._inbox], key=lambda item: item.id
            )
            self._steering = []
            self._turn_task = None
            self._arm()
            self._changed()

    def _close_interrupted(
        self, pending_calls: list[Any], result: str, *, cancelled: bool = False
    ) -> None:
        """Keep what an interrupted request streamed, and answer its open tool calls."""
        partial = "".join(self._partial)
        if partial.strip() or (cancelled and partial):
            kept = AssistantMessage(
                content=partial, tool_calls=[], cancelled=cancelled, interrupted=not cancelled
            )
            self._try_append(kept)
        for call in pending_calls:
            self._try_append(ToolResult(call_id=call.id, name=call.name, content=result))

    def _try_append(self, event: AssistantMessage | ToolResult | TurnEnd) -> LogWriteError | None:
        """An append during clean-up: a disk failure must not stop the clean-up.

        The failure is returned, not reported: the turn's end reports once."""
        try:
            self.log.append(event)
        except LogWriteError as exc:
            return exc
        return None

    # -- teardown ------------------------------------------------------------

    def close_admission(self) -> None:
        """No new turn starts from here on (shutdown): queued input stays queued."""
        self._closed = True
        if self._claim is not None:
            self._claim.cancel()
            self._claim = None

    async def aclose(self) -> None:
        """Drain the driver's own activity; never wait on a reservation holder."""
        self.close_admission()
        task = self._turn_task
        if task is not None:
            task.cancel("session closing")
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._changed()
