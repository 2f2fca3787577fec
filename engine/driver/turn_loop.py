"""The turn loop: one turn from `turn/start` to `turn/end`, tool rounds in between.

Whatever fails (the model, a tool, the disk), a turn ends with the driver
idle again and with every input that never became a message queued again,
so nothing typed is lost.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

from engine.driver.inbox_item import InboxItem, InboxItemId
from engine.driver.ports import TurnAgent
from engine.driver.state import DriverState
from engine.driver.thinking import Thinking
from engine.events import (
    AssistantMessage,
    SessionRewind,
    ToolCall,
    ToolResult,
    TurnEnd,
    TurnStart,
    UserMessage,
    usage_as_sent,
)
from engine.log import LogWriteError
from engine.model import ContextOverflowError, ModelError
from engine.model.tools import ToolBox, error_result
from engine.surface import Message
from engine.threads.retry import undo_retry

DEFAULT_MAX_TOOL_ROUNDS = 16
"""Rounds of tool calls one turn may run (``model.max_tool_rounds`` sets it)."""


class TurnLoop(DriverState):
    """Runs the turn admission handed over, and lets the user cancel it."""

    # -- turns ---------------------------------------------------------------

    def cancel(self) -> bool:
        """Stop the running turn; its partial reply is kept, marked cancelled. A turn a
        send has claimed but not started yet is stopped too: its prompts stay queued."""
        if self._turn_task is None and self._claim is not None:
            self._claim.cancel()
            self._run_claim()  # the turn is made now, and cancelled before its first step
        if self._turn_task is None or self._turn_task.done():
            return False
        self._turn_task.cancel("cancelled by the user")
        return True

    async def stop_turn(self) -> None:
        """Cancel the running turn (as `cancel`) and wait until it has ended."""
        task = self._turn_task
        if self.cancel() and task is not None:
            await asyncio.wait({task})

    def regenerate(self, after: int) -> asyncio.Task[None] | None:
        """/retry: branch the thread just after event `after` (the prompt to answer
        again) and run a turn there that takes no new prompt. The rewind line is
        fsynced before the turn starts; the turn undoes it unless it ends whole.
        None (nothing written): the boundary is not free (a turn, a claim, a reservation
        or a waiting prompt holds it)."""
        if self._closed or self._turn_task is not None or self._claim is not None:
            return None
        if self._reservation is not None or self._inbox or self._steering:
            return None
        rewind = self.log.append(SessionRewind(after=after, retry=True))
        self.log.flush()
        task = asyncio.get_running_loop().create_task(self._turn([], rewind))
        task.add_done_callback(lambda done: self._retry_never_started(done, rewind))
        self._turn_task = task
        self._changed()
        return task

    def _retry_never_started(self, task: asyncio.Task[None], retry: SessionRewind) -> None:
        """A retry cancelled before its first step never ran its clean-up: undo it here."""
        if self._turn_task is not task:
            return
        self._turn_task = None
        self._running_turn = None
        self._undo_retry(retry)
        self._arm()
        self._changed()

    def offered_tools(self) -> ToolBox:
        """The tools a request offers: the driver's own, then its extension's."""
        if self.extension is None:
            return self.tools
        return self.tools.joined(self.extension.tools())

    async def request_messages(self) -> list[Message]:
        messages: list[Message] = []
        parts = [self.system_prompt]
        if self.extension is not None:
            parts.append(self.extension.instructions())
        system = "\n\n".join(part for part in parts if part)
        if system:
            messages.append({"role": "system", "content": system})
        messages.extend(self.surface.messages())
        if self.context is not None:
            messages = await self.context(messages)
        if self.extension is not None:
            messages = await self.extension.amend(messages)
        return messages

    def _deliver_steering(self, prompts: list[int]) -> None:
        """Steering waiting for the next request becomes messages; their seqs join `prompts`."""
        while self._steering and not self._steering[0].held:
            item = self._steering[0]
            event = self.log.append(
                UserMessage(text=item.text, item_id=item.id, placement="next-step")
            )
            prompts.append(event.seq)
            self._steering.pop(0)

    async def _request(self, turn: int) -> Any:
        driver = cast("TurnAgent", self)  # a Driver: the hooks are given its agent side
        await self.surface.loaded()  # a surface kept in the resume index: read off the loop
        if self.hooks is not None:
            await self.hooks.before_request(driver, turn)

        def on_delta(text: str) -> None:
            self._thinking.answered()
            self._partial.append(text)
            self._tell("on_delta", turn, text)

        def on_reasoning(text: str) -> None:
            self._thinking.add(text)
            self._tell("on_reasoning", turn, text)

        async def attempt() -> Any:
            self._partial = []
            self._thinking = Thinking()
            messages = await self.request_messages()
            # After the messages: the extension may bring tools up as it amends them
            # (MCP servers start on the first request).
            tools = self.offered_tools().schemas() or None
            return await self.model.complete(
                messages, tools=tools, on_delta=on_delta, on_reasoning=on_reasoning
            )

        try:
            return await attempt()
        except ContextOverflowError:
            if self.hooks is None or not await self.hooks.on_overflow(driver, turn):
                raise
        return await attempt()  # once, on the compacted surface

    async def _turn(self, items: list[InboxItem], retry: SessionRewind | None = None) -> None:
        """One turn. Whatever fails (the model, a tool, the disk), it ends with the
        driver idle again, and input whose message never reached the log is
        queued again (quietly), so nothing typed is lost.

        A turn that fails before any reply or tool result withdraws its prompts
        (`turn/end` `withdrawn`): the model never answered them, the front end
        gives them back, and sent again they are in the model's history once.

        A `retry` turn (`Driver.regenerate`) takes no prompt: it answers again on the
        branch that rewind began, and unless it ends whole the thread goes back to
        the reply it was to replace (engine.threads.retry)."""
        turn = self.log.tail.last_turn + 1
        self._running_turn = turn
        status, error, reason = "ok", None, None
        started = False
        delivered: set[int] = set()
        prompts: list[int] = []
        replied = False
        pending_calls: list[Any] = []
        rounds = 0
        try:
            self.log.append(TurnStart(turn=turn, items=tuple(item.id for item in items)))
            started = True
            for item in items:
                prompts.append(self.log.append(UserMessage(text=item.text, item_id=item.id)).seq)
                delivered.add(item.id)
            while True:
                self._deliver_steering(prompts)
                completion = await self._request(turn)
                thinking, self._thinking = self._thinking, Thinking()
                self._partial = []
                calls = list(completion.tool_calls)
                offered = self.offered_tools()
                thought = completion.reasoning or None
                self.log.append(
                    AssistantMessage(
                        content=completion.content,
                        tool_calls=tuple(
                            ToolCall(c.id, c.name, c.arguments, offered.server_of(c.name))
                            for c in calls
                        ),
                        usage=usage_as_sent(completion.usage),
                        model=completion.model,
                        model_entry=self.model_entry,
                        finish_reason=completion.finish_reason,
                        reasoning=thought,
                        reasoning_seconds=thinking.seconds() if thought else None,
                    )
                )
                replied = True
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
                    box = self.offered_tools()
                    content = await box.call(call.name, call.arguments)
                    server = box.server_of(call.name)
                    self.log.append(
                        ToolResult(call_id=call.id, name=call.name, content=content, server=server)
                    )
                    pending_calls.pop(0)
                if not calls and (not self._steering or self._steering[0].held):
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
                replied = self._close_interrupted(pending_calls, f"error: {error}") or replied
        except Exception as exc:
            status, error = "error", f"{type(exc).__name__}: {exc}"
            if started:
                replied = self._close_interrupted(pending_calls, f"error: {error}") or replied
        finally:
            self._partial = []
            self._thinking = Thinking()
            if started:
                # Failed before the model answered anything: its prompts leave its history.
                failed_early = status == "error" and not replied and retry is None
                withdrawn = tuple(prompts) if failed_early else ()
                end = TurnEnd(
                    turn=turn, status=status, error=error, reason=reason, withdrawn=withdrawn
                )
                failed = self._try_append(end)
                if failed is not None:  # the log cannot say it, so say it here, once
                    self._tell(
                        "on_failure", error or f"the end of the turn was not recorded: {failed}"
                    )
            elif error is not None:
                self._tell("on_failure", error)
            again = self._undo_retry(retry) if retry is not None and status != "ok" else ()
            self._running_turn = None
            # Input that never became a message goes back to the queue, quiet: it
            # is still in the log as queued, and the user decides when to resend.
            returned = [
                InboxItem(item.id, item.text, False, item.placement, item.restored)
                for item in items
                if item.id not in delivered
            ]
            # Steering that arrived too late for this turn becomes a follow-up.
            self._inbox = sorted(
                [*returned, *self._steering, *self._inbox, *again], key=lambda item: item.id
            )
            self._steering = []
            self._turn_task = None
            self._arm()
            self._changed()

    def _undo_retry(self, retry: SessionRewind) -> list[InboxItem]:
        """A retry that did not end whole: back to the reply it was to replace. Returns the
        steering it took, queued again (what waits in memory is queued still). A log that
        cannot take the line (a full disk) leaves the thread on the retry's branch, which
        the next open undoes unless a turn ends whole on it first; the user hears so."""
        try:
            queued = undo_retry(self.log, retry)
        except OSError as exc:
            self._tell("on_failure", f"the earlier reply could not be put back: {exc}")
            return []
        waiting = {item.id for item in (*self._inbox, *self._steering)}
        return [
            InboxItem(InboxItemId(again.item_id), again.text, False, "follow-up", True)
            for again in queued
            if again.item_id not in waiting
        ]

    def _close_interrupted(
        self, pending_calls: list[Any], result: str, *, cancelled: bool = False
    ) -> bool:
        """Keep what an interrupted request streamed, its thinking too, and answer its open
        tool calls. True when a partial reply was kept (the model did answer, in part):
        thinking alone is no answer (the surface leaves such a reply out)."""
        partial = "".join(self._partial)
        thought = self._thinking.text
        answered = bool(partial.strip() or (cancelled and partial))
        kept = False
        if answered or thought.strip():
            reply = AssistantMessage(
                content=partial,
                tool_calls=(),
                model_entry=self.model_entry,
                cancelled=cancelled,
                interrupted=not cancelled,
                reasoning=thought or None,
                reasoning_seconds=self._thinking.seconds() if thought else None,
            )
            kept = self._try_append(reply) is None and answered
        for call in pending_calls:
            self._try_append(ToolResult(call_id=call.id, name=call.name, content=result))
        return kept

    def _try_append(self, event: AssistantMessage | ToolResult | TurnEnd) -> LogWriteError | None:
        """An append during clean-up: a disk failure must not stop the clean-up.

        The failure is returned, not reported: the turn's end reports once."""
        try:
            self.log.append(event)
        except LogWriteError as exc:
            return exc
        return None
