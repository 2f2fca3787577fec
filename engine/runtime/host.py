"""What the engine's commands act on: the parts of the open runtime (engine.runtime's
Runtime is one)."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from engine.compaction import CompactService
from engine.config import Config
from engine.driver import Driver
from engine.model import ModelClient
from engine.model.backend import Backend
from engine.runtime.commands import CommandRegistry
from engine.runtime.system_prompt import SystemPrompt
from engine.threads.thread import Thread


class Host(Protocol):
    """Read-only here, but for `use_model` (/model), `delete_on_close` (/delete of the
    thread in use) and `system` (/system)."""

    @property
    def home(self) -> Path: ...
    @property
    def config(self) -> Config: ...
    @property
    def thread(self) -> Thread: ...
    @property
    def driver(self) -> Driver: ...
    @property
    def commands(self) -> CommandRegistry: ...
    @property
    def compaction(self) -> CompactService: ...
    @property
    def backend(self) -> Backend | None: ...
    @property
    def model(self) -> ModelClient: ...
    @property
    def system(self) -> SystemPrompt: ...
    def use_model(self, backend: Backend) -> ModelClient: ...
    def delete_on_close(self) -> None: ...
