"""Assembles one open thread: config, log, model client, tools and driver.

Every front end (the Textual app, the plain REPL, one-shot mode, tests)
builds the same Runtime, so they cannot drift apart in behaviour.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from engine.commands import CommandError, CommandRegistry
from engine.compaction import CompactionError, CompactService
from engine.config import Config
from engine.driver import Driver
from engine.model import ModelClient
from engine.session import Thread
from engine.tools import ToolBox

SYSTEM_PROMPT = (
    "You are a helpful assistant in Trove, a terminal chat app. "
    "Answer clearly and concisely; use Markdown where it helps."
)


def make_model(config: Config) -> ModelClient:
    m = config.model
    return ModelClient(
        base_url=m.base_url,
        api_key=m.api_key,
        model=m.name,
        max_retries=m.max_retries,
        timeout=m.timeout,
        max_tokens=m.max_tokens,
    )


def open_thread(
    config: Config, home: Path, thread_id: str | None = None, new_id: str | None = None
) -> Thread:
    """The blocking part of opening a thread (replay), safe to run in a worker thread."""
    if thread_id is None:
        return Thread.create(home, config.user_id, new_id)
    return Thread.resume(home, config.user_id, thread_id)


@dataclass
class Runtime:
    config: Config
    home: Path
    thread: Thread
    model: ModelClient
    driver: Driver
    commands: CommandRegistry
    compaction: CompactService
    notices: list[str] = field(default_factory=list)

    @classmethod
    def open(
        cls,
        config: Config,
        home: Path,
        *,
        thread_id: str | None = None,
        model: ModelClient | None = None,
    ) -> Runtime:
        """Open (or resume) a thread; must run inside the event loop."""
        return cls.assemble(config, home, open_thread(config, home, thread_id), model=model)

    @classmethod
    def assemble(
        cls, config: Config, home: Path, thread: Thread, *, model: ModelClient | None = None
    ) -> Runtime:
        """Build the runtime around an opened thread (cheap: no file I/O)."""
        client = model or make_model(config)
        compaction = CompactService(
            client, config.compaction, context_window=config.model.context_window
        )
        driver = Driver(
            thread.log, client, tools=ToolBox(), system_prompt=SYSTEM_PROMPT, hooks=compaction
        )
        commands = CommandRegistry(thread.log)
        runtime = cls(config, home, thread, client, driver, commands, compaction)
        runtime._register_commands()
        if thread.log.torn_report:
            runtime.notices.append(thread.log.torn_report)
        return runtime

    def _register_commands(self) -> None:
        @self.commands.add("help", "list commands and what they do")
        async def _help(args: str) -> str:
            return self.commands.help_text()

        @self.commands.add("compact", "summarize older messages now; the originals stay searchable")
        async def _compact(args: str) -> str:
            try:
                outcome = await self.compaction.compact_now(self.driver)
            except CompactionError as exc:
                raise CommandError(str(exc)) from exc
            if outcome is None:
                return "Nothing to compact yet: the conversation is too short."
            return outcome.describe()

    async def aclose(self) -> None:
        await self.driver.aclose()
        await self.model.aclose()
        try:
            self.thread.log.flush()
        except OSError as exc:
            self.notices.append(f"could not fsync {self.thread.log.path}: {exc}")
        self.thread.close()
