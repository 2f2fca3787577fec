"""The transcript: one widget per message, built from session-log events.

It is a view of the log: every widget comes from an event (live, or on
replay when a thread is opened), so what the user sees is what the log
holds. It keeps its own list of the events pushed to it (by the chat
screen), never the engine's. Past a high-water mark the oldest widgets are
pruned; their text stays in the log and comes back when the user asks for
earlier messages.

Over 400 lines: building widgets, following the end and the window over the log all
move the same indices (`_start`, `_end`) and the streaming reply, so they stay together.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Sequence
from typing import TYPE_CHECKING, Any

from textual.actions import SkipAction
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.geometry import Size
from textual.layout import DockArrangeResult
from textual.scrollbar import ScrollBar
from textual.widget import Widget
from textual.worker import Worker

from engine import events as ev
from engine.events import LogEvent
from engine.log import LogCorruptError
from tui.drawn_lines import DrawnReply, Kept
from tui.startup import switching
from tui.widgets.chat_message import Notice, PastReply, UserMessage, draw_ahead
from tui.widgets.checkpoint_block import CheckpointBlock
from tui.widgets.load_button import LoadButton
from tui.widgets.new_output import NewOutputMarker
from tui.widgets.readable_width import readable_padding
from tui.widgets.scroll_anchor import anchor_shift
from tui.widgets.shown_events import ShownEvents
from tui.widgets.spares import Spares
from tui.widgets.still_scroll_bar import still_vertical_scrollbar
from tui.widgets.thinking_block import ThinkingBlock
from tui.widgets.tool_block import ToolBlock

if TYPE_CHECKING:
    from tui.widgets.assistant_message import AssistantMessage

HIGH_WATER = 88
"""Widgets kept mounted; beyond this (and `TRIM_SLACK`) the farthest from the view are
pruned (each layout places every one of them, and every full garbage collection walks
them and their lines)."""
TRIM_SLACK = 24
"""Widgets past `HIGH_WATER` before any is pruned: a prune lays the window out again, in
a frame of its own, so widgets go a batch at a time, not with every slice mounted (the
window holds 88 to 112, about the 100 it held before)."""
CHUNK = 150
"""Events rendered per "load earlier" step and on opening a thread."""
FILL_STEP = 24
"""Events of the opening chunk mounted per frame once the first screenful is drawn."""
FILL_AFTER = 0.1
"""Seconds after the first frame before the fill starts (work that would delay it)."""
MAX_KEPT = 40
"""Replies kept for the next open at most (tui.drawn_lines)."""
FINISHING = "finishing-reply"
"""Worker group of replies whose final render is running."""
FILLING = "filling-chunk"
"""Worker group that mounts the rest of the opening chunk after the first frame."""
SLICE = 12
"""Events mounted per frame while the window grows. Each slice lays the whole window
out again, so a held PageUp keeps up with fewer, larger slices (twice as far back in
`bench/scroll.py` at 12 as at 6); but a whole chunk at once (a reply is laid out when
mounted) would hold the loop for a tenth of a second or more."""
RESULT_REACH = 32
"""Events past the window's start still searched for a result of a call built before it."""
NEAR = 2.0
"""Screens from an end of the window at which scrolling towards it loads more."""
GROWING = "growing-window"
"""Worker group that mounts earlier or newer events into the window, a slice a frame."""
SPARES = TRIM_SLACK + SLICE
"""Widgets let go of while the window grows kept hidden for the next slices to take
(tui.widgets.spares): a batch pruned, and a slice's worth."""


def _assistant_message() -> type[AssistantMessage]:
    from tui.widgets.assistant_message import AssistantMessage

    return AssistantMessage


def _batch(archive: ev.Archive) -> int | None:
    """The batch an `archive` reference names (None: a failure, or no reference)."""
    if isinstance(archive, dict):
        batch = archive.get("batch")
        if isinstance(batch, int) and not isinstance(batch, bool):
            return batch
    return None


def _rows(event: LogEvent, width: int) -> int:
    """About how many rows the widgets of `event` take (for the first screenful)."""
    if isinstance(event, ev.UserMessage):
        text = event.text
    elif isinstance(event, ev.AssistantMessage):
        text = (event.content or "") + "\n\n" * len(event.calls)  # a tool block: two rows
        text += "\n\n" if event.reasoning else ""  # the thinking's title and its margin
    elif isinstance(event, ev.TurnEnd):
        return 2 if event.status in ("error", "cancelled") else 0
    else:
        return 0
    return 1 + sum(1 + len(line) // width for line in text.split("\n"))


class Transcript(VerticalScroll):
    BINDINGS = [
        Binding("end", "scroll_end", "Newest", show=False, tooltip="jump to the newest output"),
    ]
    max_width: int | None = None
    """Columns the messages wrap at on a wider transcript (`ui.max_width`; 0/None: all)."""
    _fitted = -1
    """The width `max_width` was last applied at (see `readable_padding`)."""
    DEFAULT_CSS = """
    Transcript {
        layout: stream;
        padding: 0 1;
        scrollbar-size-vertical: 1;
        scrollbar-gutter: stable;
    }
    /* Each message a line below the one before it, its text a cell in from its edges. */
    Transcript > UserMessage, Transcript > PastReply, Transcript > Notice,
    Transcript > CheckpointBlock, Transcript > FirstRunPanel, Transcript > ThinkingBlock {
        margin: 1 0 0 0;
        padding: 0 1;
    }
    Transcript > FirstRunPanel { margin: 1 0; }
    """

    def __init__(self, id: str | None = None) -> None:
        super().__init__(id=id)
        self.events = ShownEvents()
        """The events shown (the engine's, not a copy: older ones are read from the log's
        file when asked for)."""
        self._start = 0
        self._end = 0
        self._reply: AssistantMessage | None = None
        self._thinking: ThinkingBlock | None = None
        """The thinking streaming in now (a reasoning model's), until its reply is logged."""
        self._tools: dict[str, ToolBlock] = {}
        self._results: dict[str, str] = {}
        """Tool results by call id, of the log's events [`_indexed_from`, `_indexed_to`)
        (see `_result_of`)."""
        self._indexed_from = 0
        self._indexed_to = 0
        self._building = 0
        self._building_end = 0
        """The range of events being built (`_build_range`)."""
        self._checkpoints: dict[int, CheckpointBlock] = {}
        self._interrupted = False
        """The reply just built was cut off by a failed stream (its turn's notice says so)."""
        self.marker: NewOutputMarker | None = None
        """Says output arrived while the user reads back (the chat screen sets it)."""
        self._fill_to: int | None = None
        """Where the opening chunk starts while its older part is still being mounted."""
        self._fill_interrupted = False
        """`_interrupted` as it stood at the start of the opening chunk (for the fill)."""
        self.kept: Kept = {}
        """Replies' lines as the last session drew them, by seq (tui.drawn_lines)."""
        self._earlier_to: int | None = None
        """Where the window's start is being moved back to, a slice a frame (`_grow`)."""
        self._newer_to: int | None = None
        """Where the window's end is being moved on to, a slice a frame (`_grow`)."""
        self._arranged: DockArrangeResult | None = None
        """The last arrangement of the children (see `arrange`)."""
        self._grower: Worker[None] | None = None
        self._ahead: tuple[int, list[LogEvent]] = (0, [])
        """Events read off the loop for the window to grow into: (the first's index, them)."""
        self._drawn_ahead: dict[int, DrawnReply] = {}
        """The next slice's replies, drawn in a thread before they are mounted (by seq)."""
        self._by_scroll = 0
        """The window grows because the user scrolled near an end of it (-1: the earlier
        end, 1: the newer one): it goes on that way while the view stays near there."""
        self._spares = Spares(SPARES)

    @property
    def vertical_scrollbar(self) -> ScrollBar:
        """It draws its rows again only when they would change (`StillScrollBar`)."""
        return still_vertical_scrollbar(self)

    def _size_updated(
        self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True
    ) -> bool:
        if size.width != self._fitted:
            self._fitted = size.width
            self.styles.padding = readable_padding(size.width, self.max_width)
        # A reply frame grows the transcript's virtual size in the layout that placed
        # it (which also scrolled an anchored view to the end and sized the scrollbar):
        # as a layout reactive, the new size would ask for a second, identical layout.
        return super()._size_updated(size, virtual_size, container_size, layout=False)

    def arrange(self, size: Size, optimal: bool = False) -> DockArrangeResult:
        """The children's places; a view scrolled up keeps the line at its top where it
        is when widgets come or go above it (tui.widgets.scroll_anchor)."""
        arranged = super().arrange(size, optimal)
        before, self._arranged = self._arranged, arranged
        if before is None or before is arranged or (self._anchored and not self._anchor_released):
            return arranged
        shift = anchor_shift(before, arranged, self.scroll_y, (LoadButton,))
        if shift:
            y = max(0.0, self.scroll_y + shift)
            # As the compositor moves an anchored view: before the placements use it.
            self.set_reactive(Widget.scroll_y, y)
            self.set_reactive(Widget.scroll_target_y, y)
            self.vertical_scrollbar.set_reactive(ScrollBar.position, y)
        return arranged

    # -- building widgets from events -------------------------------------------

    def _widgets_for(self, event: LogEvent, *, live: bool = False) -> list[Widget]:
        if isinstance(event, ev.UserMessage):
            checkpoint = event.checkpoint
            if checkpoint is not None:
                summary = event.text.split("\n\n", 1)[-1]
                checkpoint_block = CheckpointBlock(
                    seq=event.seq, count=checkpoint.count or 0, summary=summary
                )
                self._checkpoints[checkpoint.start or 0] = checkpoint_block
                return [checkpoint_block]
            if event.source == "inject":
                injected = self._user_message(event.text, event.seq, label="context")
                injected.add_class("-injected")
                return [injected]
            if event.placement == "next-step":
                steer = self._user_message(event.text, event.seq, label="steer")
                steer.add_class("-steer")
                return [steer]
            return [self._user_message(event.text, event.seq)]
        if isinstance(event, ev.AssistantMessage):
            out: list[Widget] = []
            content = event.content or ""
            # A reply cut off while it was still thinking kept no text: nothing of a reply.
            self._interrupted = event.interrupted and bool(content)
            if live and self._thinking is not None:
                thinking, self._thinking = self._thinking, None
                thinking.finish(event.reasoning or "", event.reasoning_seconds)
            elif event.reasoning:
                out.append(ThinkingBlock(event.reasoning, seconds=event.reasoning_seconds))
            if live and self._reply is not None:
                reply, self._reply = self._reply, None
                reply.seq = event.seq
                self._spawn(
                    reply.finish(content, cancelled=event.cancelled, interrupted=self._interrupted)
                )
            elif content:
                message: Widget = (
                    _assistant_message()(content, seq=event.seq)
                    if live
                    else self._past_reply(
                        content,
                        event.seq,
                        self._drawn_ahead.pop(event.seq, None) or self.kept.get(event.seq),
                    )
                )
                if event.cancelled:
                    message.add_class("-cancelled")
                if self._interrupted:
                    message.add_class("-interrupted")
                out.append(message)
            for call in event.calls:
                tool_block = self._tool_block(call.id, call.name, call.arguments or "", live)
                if not live:
                    found = self._result_of(call.id)
                    if found is not None:
                        tool_block.set_result(found)
                self._tools[tool_block.call_id] = tool_block
                out.append(tool_block)
            return out
        if isinstance(event, ev.ToolResult):
            called = self._tools.get(event.call_id)
            if called is not None and called.result != event.content:
                called.set_result(event.content)
            return []
        if isinstance(event, ev.TurnEnd):
            interrupted, self._interrupted = self._interrupted, False
            if live and self._thinking is not None:  # thinking the log never took
                thinking, self._thinking = self._thinking, None
                thinking.finish(thinking.text, None)
            if live and self._reply is not None:
                # Text streamed but never logged: close it here, or the next turn's
                # reply would be written into it. Blank text is not worth a widget.
                reply, self._reply = self._reply, None
                if reply.text.strip():
                    self._spawn(reply.finish(reply.text, interrupted=True))
                else:
                    self._spawn(self._discard(reply))
            if event.status == "error":
                kept = " — the partial reply is kept" if interrupted else ""
                text = f"✗ {event.error or 'the turn failed'}{kept}"
                return [Notice(text, variant="error")]
            if event.status == "cancelled":
                return [Notice("turn cancelled — the partial reply is kept", variant="warning")]
            return []
        if isinstance(event, ev.CompactStart) and event.open_turn:
            return [
                Notice(
                    "Your prompt alone is larger than the context window: it is summarized too.",
                    variant="warning",
                )
            ]
        if isinstance(event, ev.CompactEnd):
            closed = self._checkpoints.get(event.start or 0)
            if closed is not None:
                batch = _batch(event.archive)
                if batch is not None:
                    closed.batch_id = batch
                else:
                    closed.archive_note = "not archived (history unavailable)"
            return []
        if isinstance(event, ev.CompactArchived):  # archived after a crash or a failed capture
            archived = self._checkpoints.get(event.start)
            batch = _batch(event.archive)
            if archived is not None and batch is not None:
                archived.batch_id = batch
                archived.archive_note = ""
            return []
        return []

    def _user_message(self, text: str, seq: int, label: str = "") -> UserMessage:
        spare = self._spares.take(UserMessage, self)
        if spare is None:
            return UserMessage(text, seq=seq, label=label)
        spare.rebind(text, seq=seq, label=label)
        return spare

    def _past_reply(self, text: str, seq: int, drawn: DrawnReply | None) -> PastReply:
        spare = self._spares.take(PastReply, self)
        if spare is None:
            return PastReply(text, seq=seq, drawn=drawn)
        spare.rebind(text, seq=seq, drawn=drawn)
        return spare

    def _tool_block(self, call_id: str, name: str, arguments: str, live: bool) -> ToolBlock:
        spare = None if live else self._spares.take(ToolBlock, self)
        if spare is None:
            return ToolBlock(call_id, name, arguments, live=live)
        spare.rebind(call_id, name, arguments)
        return spare

    def _place(
        self, widgets: list[Widget], *, after: Widget | None = None, before: Widget | None = None
    ) -> None:
        """Put built widgets, in order, `after` or `before` a widget (neither: at the end):
        new ones are mounted, spares taken for them (children already) moved there."""
        spare = [w.parent is self for w in widgets]
        new = [w for w, taken in zip(widgets, spare, strict=True) if not taken]
        if new:
            self.mount_all(new, after=after, before=before)
        if len(new) == len(widgets):
            return
        for index, widget in enumerate(widgets):
            if not spare[index]:
                continue
            if index:
                self.move_child(widget, after=widgets[index - 1])
            elif new:
                self.move_child(widget, before=new[0])
            elif after is not None:
                self.move_child(widget, after=after)
            elif before is not None:
                self.move_child(widget, before=before)
            else:
                self.move_child(widget, after=self._nodes[-1])

    def _result_of(self, call_id: str) -> str | None:
        """A call's result wherever it is in the log (it may be in a chunk not loaded yet).

        A result follows its call, so only the log from the earliest event built so far
        is indexed: a long thread's first screenful indexes a few dozen events, not
        every event since it began. A range built past the index's end (the window
        moving on) indexes a little past it, where its last calls' results are; one
        that leaves a gap restarts the index at itself.
        """
        begin, end = self._building, self._building_end
        results = self._results
        if begin < self._indexed_from:
            for event in reversed(self._read(begin, self._indexed_from)):
                if isinstance(event, ev.ToolResult):
                    results.setdefault(event.call_id, event.content)  # the later one stands
            self._indexed_from = begin
        reach = min(len(self.events), end + RESULT_REACH)
        if self._indexed_to < reach:
            if self._indexed_to < begin:
                results.clear()
                self._indexed_from = self._indexed_to = begin
            for event in self._read(self._indexed_to, reach):
                if isinstance(event, ev.ToolResult):
                    results[event.call_id] = event.content  # later than any indexed
            self._indexed_to = reach
        return results.get(call_id)

    async def _discard(self, reply: AssistantMessage) -> None:
        await reply.finish(reply.text)  # stops its stream pump first
        await reply.remove()

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        """A reply's final render awaits its stream: a worker, so events go on meanwhile."""
        self.run_worker(work, group=FINISHING, exit_on_error=False)

    def finishing(self) -> list[Worker[None]]:
        """The replies whose final render is still running, and the opening chunk's fill
        (tests wait on these)."""
        return [
            w
            for w in self.workers
            if w.node is self and w.group in (FINISHING, FILLING, GROWING) and not w.is_finished
        ]

    # -- live ---------------------------------------------------------------------

    def show_event(self, event: LogEvent) -> None:
        """A live event, just appended to the log."""
        self.events.append(event)
        if self._indexed_to == len(self.events) - 1:
            self._indexed_to += 1  # the index reached the log's end: it still does
            if isinstance(event, ev.ToolResult):
                self._results[event.call_id] = event.content
        if self._end < len(self.events) - 1:
            # The user is reading older history: newer events wait behind the
            # "newer" button instead of pulling the window (and memory) along.
            self._update_buttons()
            self._show_marker(True)
            return
        self._end = len(self.events)
        widgets = self._build(event, live=True)
        if widgets:
            self._output_arrives()
            self._place(widgets, before=self._newer_button())
            self._trim(top=True)

    def reasoning(self, text: str) -> None:
        """A reasoning model's thinking: a collapsed block above the reply to come."""
        if self._end < len(self.events):
            return
        if self._thinking is None:
            self._output_arrives()
            self._thinking = ThinkingBlock(live=True)
            if self._reply is not None:  # thinking after some text: still above it
                self.mount(self._thinking, before=self._reply)
            else:
                self.mount(self._thinking)
        self._thinking.write(text)

    def delta(self, text: str) -> None:
        if self._end < len(self.events):
            return
        if self._thinking is not None:
            self._thinking.stop()  # the answer begins
        if self._reply is None:
            self._output_arrives()
            self._reply = _assistant_message()()
            self.mount(self._reply)
        elif self.marker is not None and not (
            self.marker.display or self.tracks_end or self.at_end
        ):
            self._show_marker(True)  # the reply grows below a view the user scrolled up
        self._reply.write(text)

    def notice(self, text: str, variant: str = "") -> Notice:
        widget = Notice(text, variant=variant)
        self._output_arrives()
        self.mount(widget, before=self._newer_button())
        self._trim(top=True)
        return widget

    # -- following the end --------------------------------------------------------------
    #
    # Textual's anchor keeps the view at the end while new widgets grow the
    # transcript, until the user scrolls. A scroll key pressed at the end
    # releases the anchor without moving the view (Down on the last line), and
    # Textual re-anchors only when the position changes: every reply after
    # that would grow out of sight. Here a scroll that leaves the view at the
    # end always follows again, and only a view scrolled up stays put.

    @property
    def at_end(self) -> bool:
        return self.scroll_y >= self.max_scroll_y - 1

    def release_anchor(self) -> None:
        super().release_anchor()
        self.call_after_refresh(self._follow_if_at_end)

    def _follow_if_at_end(self) -> None:
        if self._end < len(self.events):
            return  # the end of the window, not of the log: nothing new shows there
        if self.at_end and self.scroll_target_y >= self.max_scroll_y - 1:
            self.anchor()
            self._show_marker(False)

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if self.marker is not None and self.marker.display and self.at_end:
            self._show_marker(self._end < len(self.events))

    @property
    def tracks_end(self) -> bool:
        """Anchored, and the anchor not released by a scroll: new output will be scrolled
        into view (in the frame that lays it out, so `at_end` may lag a frame behind)."""
        return self.is_anchored and not self._anchor_released

    def _output_arrives(self) -> None:
        """New output is about to be shown: the marker says so when the user reads back."""
        if not (self.at_end or self.tracks_end) or self._end < len(self.events):
            self._show_marker(True)

    def _show_marker(self, shown: bool) -> None:
        if self.marker is not None:
            self.marker.show(shown)

    def jump_to_end(self) -> None:
        """Show the newest output and follow it (a send, the marker, End)."""
        if self._end < len(self.events):
            self.remove_children()
            self._spares.clear()
            self._reply = None
            self.load(self.events)
        self.anchor()
        self._show_marker(False)

    def action_scroll_end(self) -> None:
        self.jump_to_end()

    def scroll_key(self, action: str) -> None:
        """A scroll key pressed elsewhere (the prompt): as if the transcript had the focus."""
        if action == "page_up":
            self.action_page_up()
        elif action == "page_down":
            self.action_page_down()
        elif action == "scroll_start":
            self.jump_to_start()
        elif action == "scroll_end":
            self.jump_to_end()

    def jump_to_start(self) -> None:
        """Show the thread's first messages (Ctrl+Home), wherever the window was."""
        if self._start > 0:
            self.remove_children()
            self._spares.clear()
            self._reply = None
            self._thinking = None
            self._fill_to = None
            self._start = self._end = 0
            self._interrupted = False
            # Results come after their calls: the chunk's own are built with it.
            self._results, self._indexed_from, self._indexed_to = {}, 0, 0
            self.load_newer()
        self.anchor(False)  # not following the end, even while the first slice fits
        self.scroll_home(animate=False)

    # -- the window over the log -------------------------------------------------------
    #
    # Only events [_start, _end) of the log have widgets. Loading earlier
    # events trims the newest ones past the high-water mark and the other way
    # round, so memory stays bounded however far the user scrolls.

    def _build(self, event: LogEvent, *, live: bool = False) -> list[Widget]:
        widgets = self._widgets_for(event, live=live)
        for widget in widgets:
            widget.origin = event.seq  # type: ignore[attr-defined]
        return widgets

    def _build_range(self, begin: int, end: int) -> list[Widget]:
        self._building, self._building_end = begin, end
        try:
            events = self._read(begin, end)
        except LogCorruptError as exc:  # damaged since the thread was opened from its end
            said = f"Earlier messages could not be read: {exc}"
            self.notify(said, severity="error", markup=False)
            return []
        widgets: list[Widget] = []
        for event in events:
            widgets.extend(self._build(event))
        return widgets

    def load(self, events: Sequence[LogEvent], kept: Kept | None = None) -> None:
        """Show the newest part of a thread; earlier parts load on demand.

        Only about a screenful of the newest events is built before the first
        frame; the rest of the opening chunk is mounted above it afterwards, a
        few events a frame (`_fill`): building and laying out a whole chunk
        of rendered Markdown is most of a long thread's resume. Replies in
        `kept` (tui.drawn_lines) are drawn from the lines kept there.
        """
        self.kept = kept or {}
        self._spares.clear()  # the children are new (or gone): none is kept
        self.events = ShownEvents(events)
        self._ahead = (0, [])
        self._drawn_ahead = {}
        self._thinking = None  # its widget went with the children: it streams no more here
        self._results = {}
        self._indexed_from = self._indexed_to = len(self.events)
        self._end = len(self.events)
        start = max(0, self._end - CHUNK)
        split = self._screenful(start)
        self._fill_interrupted = self._interrupted
        self._interrupted = self._interrupted_at(start, split)
        self._start = split
        self._fill_to = start if start < split else None
        self._place(self._build_range(split, self._end))
        self._update_buttons()
        self.anchor()
        if self._fill_to is not None:
            self.run_worker(self._fill(), group=FILLING, exclusive=True, exit_on_error=False)

    def _screenful(self, start: int, *, screens: float = 1.5) -> int:
        """Where the newest events that (about) fill `screens` screens begin, not before
        `start`.

        Estimated from the text: lines and wrapped width, a margin line each.
        """
        width = max(20, self.app.size.width - 4)
        wanted = int(self.app.size.height * screens)
        rows = 0
        index = self._end
        while index > start and rows < wanted:
            index -= 1
            rows += _rows(self.events[index], width)
        return index

    def _interrupted_at(self, begin: int, index: int) -> bool:
        """`_interrupted` as building events [begin, index) in order would leave it."""
        for event in reversed(self.events[begin:index]):
            if isinstance(event, ev.AssistantMessage):
                return event.interrupted and bool(event.content)
            if isinstance(event, ev.TurnEnd):
                return False
        return self._interrupted

    def _fill_step(self, steps: int | None = None) -> None:
        """Mount (up to `steps` events of) what is left of the opening chunk, above the rest."""
        target = self._fill_to
        if target is None:
            return
        begin = target if steps is None else max(target, self._start - steps)
        if begin < self._start:
            later, self._interrupted = self._interrupted, self._fill_interrupted
            widgets = self._build_range(begin, self._start)
            self._fill_interrupted = self._interrupted
            self._interrupted = later
            self._start = begin
            if widgets:
                self._place(widgets, after=self._earlier_button())
        if self._start <= target:
            self._fill_to = None
        self._update_buttons()

    async def _fill(self) -> None:
        await self.wait_for_refresh()
        await asyncio.sleep(FILL_AFTER)
        while self._fill_to is not None:
            await self.wait_for_refresh()  # the first frame (then each step's) is drawn
            self._fill_step(FILL_STEP)

    def load_earlier(self) -> None:
        """Move the window's start a chunk back (a chunk further if it is moving already):
        the rest of the opening chunk first, so the order stays the log's."""
        base = self._start if self._earlier_to is None else self._earlier_to
        if self._fill_to is not None:
            base = min(base, self._fill_to)
        if base == 0 and self._fill_to is None and self._start == 0:
            return
        self._earlier_to = max(0, base - CHUNK)
        self._grow()

    def load_newer(self) -> None:
        """Move the window's end a chunk on (a chunk further if it is moving already)."""
        base = self._end if self._newer_to is None else self._newer_to
        if base >= len(self.events):
            return
        self._newer_to = min(len(self.events), base + CHUNK)
        self._grow()

    # -- growing the window a slice a frame -------------------------------------------
    #
    # Mounting a chunk at once lays out every reply in it in one frame. The window
    # grows towards `_earlier_to` / `_newer_to` instead, SLICE events a frame, and
    # scroll anchoring (`arrange`) keeps the line being read where it is meanwhile.

    def _grow(self) -> None:
        if self._grower is None or self._grower.is_finished:
            self._grower = self.run_worker(self._growing(), group=GROWING, exit_on_error=False)

    async def _growing(self) -> None:
        while True:
            await self._read_ahead()
            await self._draw_ahead()
            if not self._grow_step():
                break
            await self.wait_for_refresh()
        self._by_scroll = 0

    def _read(self, begin: int, end: int) -> list[LogEvent]:
        """Events [begin, end): from what was read ahead, else from the log (older ones
        from its file)."""
        first, ahead = self._ahead
        if first <= begin and end <= first + len(ahead):
            return ahead[begin - first : end - first]
        return self.events[begin:end]

    async def _read_ahead(self) -> None:
        """Read the events the window grows into next in a thread: the log's file is
        not read on the loop (a result may follow its call: a little past that end too)."""
        if self._earlier_to is not None and self._fill_to is None:
            first, end = self._earlier_to, min(len(self.events), self._start + RESULT_REACH)
        elif self._earlier_to is None and self._newer_to is not None:
            first, end = self._end, min(len(self.events), self._newer_to + RESULT_REACH)
        else:
            return
        had, ahead = self._ahead
        if had <= first and end <= had + len(ahead):
            return
        events = self.events
        try:
            with switching.short_while():
                read = await asyncio.to_thread(events.__getitem__, slice(first, end))
        except LogCorruptError:
            return  # building the slice reads it again and says so
        if events is self.events:  # not another thread's, opened meanwhile
            self._ahead = (first, read)

    async def _draw_ahead(self) -> None:
        """Draw the replies of the slice mounted next (scrolling back) in a thread, as a
        past reply on screen draws: laid out on the loop, each would render its Markdown
        there, in the frame that mounts it."""
        if self._earlier_to is None or self._fill_to is not None:
            return
        begin = max(self._earlier_to, self._start - SLICE)
        template = next(
            (
                c
                for c in self._nodes
                if type(c) is PastReply and not c.classes and c.size.width and c.display
            ),
            None,
        )
        if begin >= self._start or template is None:
            return
        try:
            events = self._read(begin, self._start)
        except LogCorruptError:
            return  # building the slice reads it again and says so
        slice_replies = {
            e.seq: e.content for e in events if isinstance(e, ev.AssistantMessage) and e.content
        }
        # What an earlier step drew and this slice does not hold is not mounted any more.
        self._drawn_ahead = {s: d for s, d in self._drawn_ahead.items() if s in slice_replies}
        replies = [(s, text) for s, text in slice_replies.items() if s not in self._drawn_ahead]
        if replies:
            shown = self.events
            with switching.short_while():
                drawn = await asyncio.to_thread(draw_ahead, template, replies)
            if self.events is shown:  # not another thread's, opened meanwhile
                self._drawn_ahead.update(drawn)

    def _grow_step(self) -> bool:
        """Mount one slice of what the window grows by; False once it has it all."""
        self._release_unseen_lines()
        if self._earlier_to is not None:
            if self._fill_to is not None:
                self._fill_step(SLICE)
                return True
            if self._start > self._earlier_to:
                begin = max(self._earlier_to, self._start - SLICE)
                widgets = self._build_range(begin, self._start)
                self._start = begin
                if widgets:
                    self._place(widgets, after=self._earlier_button())
                self._trim(top=False)
                self._update_buttons()
                return True
            self._earlier_to = None
        if self._newer_to is not None:
            if self._end < self._newer_to:
                stop = min(self._newer_to, self._end + SLICE)
                widgets = self._build_range(self._end, stop)
                self._end = stop
                if widgets:
                    self._place(widgets, before=self._newer_button())
                self._trim(top=True, force=True)
                self._update_buttons()
                return True
            self._newer_to = None
            if self._end >= len(self.events):
                # The log's end is in the window again: follow it once the user is there.
                self._anchored = True
                self._anchor_released = not self.at_end
        return self._reach_ends(self._by_scroll)

    def _reach_ends(self, way: int) -> bool:
        """Scrolled (`way`: -1 up, 1 down) within NEAR screens of that end of the window
        with more of the log beyond it: the window grows that way. True if it does."""
        margin = self.size.height * NEAR
        earlier = self._start > 0 or self._fill_to is not None
        if way < 0 and earlier and self._earlier_to is None:
            top = min(self.scroll_y, self.scroll_target_y)
            if top <= margin:
                self.load_earlier()
                return True
        if way > 0 and self._newer_to is None and self._end < len(self.events):
            bottom = max(self.scroll_y, self.scroll_target_y)
            if bottom >= self.max_scroll_y - margin:
                self.load_newer()
                return True
        return False

    def _scrolled(self, way: int) -> None:
        """The user scrolled (-1 up, 1 down): near that end of the window, it grows (and
        goes on growing while the view stays near there)."""
        if self._reach_ends(way):
            self._by_scroll = way

    # Pages move at once, neither animated nor after the next refresh (Textual's way):
    # a held key repeats faster than an animation ends, and a move computed before a
    # refresh would undo what scroll anchoring moved in it.

    def action_page_up(self) -> None:
        self._page(-1)

    def action_page_down(self) -> None:
        self._page(1)

    def _page(self, way: int) -> None:
        if not self.allow_vertical_scroll:
            raise SkipAction()
        page = self.scrollable_content_region.height
        self.scroll_to(y=self.scroll_y + way * page, animate=False, immediate=True)
        self._scrolled(way)

    def action_scroll_up(self) -> None:
        super().action_scroll_up()
        self._scrolled(-1)

    def action_scroll_down(self) -> None:
        super().action_scroll_down()
        self._scrolled(1)

    def action_scroll_home(self) -> None:
        super().action_scroll_home()
        self._scrolled(-1)

    def on_mouse_scroll_up(self) -> None:
        self._scrolled(-1)

    def on_mouse_scroll_down(self) -> None:
        self._scrolled(1)

    def to_keep(self) -> list[DrawnReply]:
        """The lines of the replies the next open at this size builds before its first
        frame (`load`: the newest screenful, by the same estimate, twice over for a margin),
        as drawn now: every one of them it has to render itself loads the Markdown parser."""
        if self._end < len(self.events):
            return []  # reading older history: the newest replies are not mounted
        first = self._screenful(max(0, self._end - CHUNK), screens=3)
        since = self.events[first].seq if first < len(self.events) else 0
        kept: list[DrawnReply] = []
        for widget in reversed(self._content()):
            if len(kept) >= MAX_KEPT:
                break
            if isinstance(widget, PastReply) and (widget.seq or 0) >= since:
                drawn = widget.to_keep()
                if drawn is not None:
                    kept.append(drawn)
        return kept

    def _content(self) -> list[Widget]:
        """The window's widgets: neither its load rows nor its hidden spares."""
        spares = self._spares
        if not spares:
            return [c for c in self.children if not isinstance(c, LoadButton)]
        return [c for c in self.children if not isinstance(c, LoadButton) and c not in spares]

    def _trim(self, *, top: bool, force: bool = False) -> None:
        """Drop widgets past the high-water mark from one end of the window, but none the
        view shows: a chunk grown above the view (more widgets than the mark) would
        otherwise prune the very lines being read. Past the mark, its slack and two chunks
        they go anyway (a view held at the far end of what grows: only a program loads
        earlier while showing the newest), so the window stays bounded."""
        children = self._content()
        excess = len(children) - HIGH_WATER
        if excess <= TRIM_SLACK or (top and not force and not self.following):
            return
        if len(children) <= HIGH_WATER + TRIM_SLACK + 2 * CHUNK:
            # Regions and scroll offset as the last layout placed them.
            if top:
                while excess and children[excess - 1].virtual_region.bottom > self.scroll_y:
                    excess -= 1
            else:
                shown_to = self.scroll_y + self.size.height
                while excess and children[-excess].virtual_region.y < shown_to:
                    excess -= 1
            if not excess:
                return
        if top:
            doomed, kept = children[:excess], children[excess:]
            origin = next((w.origin for w in kept if hasattr(w, "origin")), None)
            if origin is not None:
                self._start = max(self._start, origin - 1)
        else:
            doomed, kept = children[-excess:], children[:-excess]
            origin = next((w.origin for w in doomed if hasattr(w, "origin")), None)
            if origin is not None:
                self._end = min(self._end, origin - 1)
            self.anchor(False)
            # Results are looked up only for calls built before the window from now on: the
            # index restarts a little past its start, so it never holds the whole thread's.
            self._results = {}
            self._indexed_from = min(len(self.events), self._start + RESULT_REACH)
            self._indexed_to = self._indexed_from
        for widget in doomed:
            self._forget(widget)
        if self._earlier_to is not None or self._newer_to is not None:
            doomed = self._spares.keep(doomed)  # the next slices show their messages in them
        if doomed:
            self.remove_children(doomed)  # one prune, one layout once they are gone
        self._update_buttons()

    def _release_unseen_lines(self) -> None:
        """Let go of the screen's drawn lines of messages out of view while the window grows.

        Textual keeps each widget's last drawn lines (and what the screen cropped from
        them) until the widget is drawn again; scrolling through a long thread leaves
        most of the window's messages holding some, for every full collection to walk.
        A past reply out of view folds its own lines too (`PastReply.fold_lines`). One
        that comes back into view is drawn again (a past reply from its own lines).
        """
        visible = self.screen._compositor.visible_widgets
        for child in self._nodes:
            if child in visible:
                continue
            if isinstance(child, PastReply):
                child.fold_lines()  # its own lines, as plain tuples until drawn again
            for node in child.walk_children(Widget, with_self=True):
                if node._render_cache.lines:  # a text widget's lines, rendered from its content
                    node._render_cache = node._render_cache._replace(lines=[])
                    node._set_dirty()  # rendered anew when drawn again (no repaint asked now)
                elif node._styles_cache._cache:
                    node._styles_cache.clear()

    def _forget(self, widget: Widget) -> None:
        """Drop what refers to a widget pruned from the window, so it can be freed."""
        # Its drawn lines (and the lines the screen derived from them) go now, not when a
        # full collection finds the widget: a pruned widget is in cycles with the app.
        for node in widget.walk_children(Widget, with_self=True):
            node._styles_cache.clear()
            if isinstance(node, PastReply):
                node.forget_lines()
        if isinstance(widget, ToolBlock) and self._tools.get(widget.call_id) is widget:
            del self._tools[widget.call_id]
        elif isinstance(widget, CheckpointBlock):
            for start, block in list(self._checkpoints.items()):
                if block is widget:
                    del self._checkpoints[start]

    def _earlier_button(self) -> LoadButton | None:
        # The first child when there is one: a query would walk every widget mounted.
        return self._button(0, "load-earlier")

    def _newer_button(self) -> LoadButton | None:
        return self._button(-1, "load-newer")

    def _button(self, at: int, name: str) -> LoadButton | None:
        children = self._nodes
        if children:
            found = children[at]
            if isinstance(found, LoadButton) and found.id == name:
                return found
        return None

    def _update_buttons(self) -> None:
        earlier, newer = self._earlier_button(), self._newer_button()
        if self._start > 0:
            label = f"▲ {self._start} earlier events — click to load"
            if earlier is None:
                self.mount(LoadButton(label, id="load-earlier"), before=0)
            else:
                earlier.label = label
        elif earlier is not None:
            earlier.remove()
        waiting = len(self.events) - self._end
        if waiting > 0:
            label = f"▼ {waiting} newer events — click to load"
            if newer is None:
                self.mount(LoadButton(label, id="load-newer"))
            else:
                newer.label = label
        elif newer is not None:
            newer.remove()

    def on_load_button_pressed(self, event: LoadButton.Pressed) -> None:
        event.stop()
        if event.button.id == "load-earlier":
            self.load_earlier()
        else:
            self.load_newer()

    @property
    def following(self) -> bool:
        """Anchored and not scrolled away by the user: safe to prune the top."""
        return self.is_anchored and self.scroll_y >= self.max_scroll_y - 1
