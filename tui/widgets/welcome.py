"""What a new, empty thread shows first: the model, where data and config live, the keys.

A screen with nothing on it tells a new user nothing, so an empty thread opens
with one welcome notice (and, when the model is the tiny bundled offline one,
a note saying so and how to connect a real one). The welcome belongs to the
view, not the log: it is not replayed, and a thread with messages never shows it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from engine import events as ev
from engine.model.backend import Backend
from tui.widgets.chat_message import Notice

KEYS = "Enter sends · Esc cancels a reply · F1 lists every key and command"
"""The three keys a first session needs; F1 has the rest."""


def home_label(path: Path) -> str:
    """`path` with the user's home as `~`, the way people write it."""
    try:
        return "~/" + str(path.relative_to(Path.home()))
    except ValueError:
        return str(path)


def is_empty(events: Sequence[ev.LogEvent]) -> bool:
    """No message yet: read from the newest (the events an open holds), stopping at the
    first message, so a long thread costs nothing."""
    return not any(isinstance(e, (ev.UserMessage, ev.AssistantMessage)) for e in reversed(events))


def model_label_of(path: Path) -> str:
    """The local model's short name (engine.model.local.runner is imported only with a
    local model)."""
    from engine.model.local.runner import model_label

    return model_label(path)


def tiny_offline(backend: Backend | None) -> bool:
    """The bundled offline model (not a GGUF the user chose with local.model_path)."""
    return backend is not None and backend.offline and backend.config.local.model_path is None


def placeholder(model_label: str, backend: Backend | None, configured: bool) -> str:
    """The empty prompt's hint; the local model goes by its short name, not the header's."""
    if not configured:
        return "No model is configured yet (see above) — F1 for help"
    if backend is not None and backend.local is not None:
        model_label = model_label_of(backend.local.model_path)
    return f"Message {model_label} — Enter to send, F1 for help"


class Welcome(Notice):
    """The welcome line: a notice that is not in the log."""

    DEFAULT_CSS = """
    Welcome { color: $text; }
    """

    def __init__(
        self, model_label: str, thread_dir: Path, config_label: str, config_read: bool
    ) -> None:
        config = (
            f"Config: {config_label}."
            if config_read
            else f"No config file (defaults); put one at {config_label}."
        )
        super().__init__(
            f"Welcome to Trove. Model: {model_label}. This thread is kept in "
            f"{home_label(thread_dir)}.\n{config}\n{KEYS}."
        )


class TinyModelNote(Notice):
    """Says the offline model is a toy, and how to point Trove at a real one."""

    def __init__(self, backend: Backend, config_label: str) -> None:
        model = model_label_of(backend.local.model_path) if backend.local else backend.label
        forced = (
            " (and remove model.provider: local or --local)"
            if backend.config.model.provider == "local"
            else ""
        )
        super().__init__(
            f"This is the tiny offline model ({model}): fine for trying Trove, not for real "
            "work. To use a real one, set OPENAI_API_KEY (OpenAI) or OPENAI_BASE_URL (any "
            f"OpenAI-compatible server), or model.base_url, model.api_key and model.name in "
            f"{config_label}{forced}, then restart Trove.",
            variant="warning",
        )
