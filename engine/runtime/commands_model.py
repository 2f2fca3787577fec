"""/model: the config's named models, and switching the open thread to another.

A switch happens between turns only: while a reply or a compaction runs, /model
NAME is refused (said in one line), not queued, so a reply is never written half
by one model and half by another and the user knows which model the next reply
comes from. The new client takes over from the next request; the old one is
closed. The front end hears of it through its optional `model_changed(backend)`
hook (its header's label and context figure, and the model its next thread
opens with).
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit

from engine.config import ConfigError
from engine.config.models import model_names, with_model
from engine.model.backend import Backend, choose_backend
from engine.runtime.commands import CommandError, FrontEnd
from engine.runtime.host import Host
from engine.util.safe_text import safe_text


def current_model(runtime: Host) -> str:
    """The name /model marks as in use."""
    backend = runtime.backend
    if backend is not None and backend.entry is not None:
        return backend.entry
    return runtime.driver.model_entry or runtime.config.model.name


def model_listing(runtime: Host) -> str:
    """Every model of the config, one line each, the one in use marked `*`."""
    config, current = runtime.config, current_model(runtime)
    names = model_names(config)
    width = max(len(name) for name in names)
    lines = ["Models (* is in use; /model NAME switches from the next reply on):"]
    for name in names:
        mark = "*" if name == current else " "
        try:
            model = with_model(config, name, os.environ).model
        except ConfigError as exc:
            lines.append(f"  {mark} {name:<{width}}  unusable: {exc}")
            continue
        url = model.base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        host = urlsplit(url).netloc or url
        about = f"{model.name} · {host} · {model.context_window:,} tokens"
        lines.append(f"  {mark} {name:<{width}}  {about}")
    if not config.models:
        lines.append("Add models: entries to the config to switch between several.")
    return safe_text("\n".join(lines))


def busy(runtime: Host) -> str | None:
    """Why the model cannot change now (None: it can)."""
    driver = runtime.driver
    if runtime.thread.log.tail.open_compact is not None:
        return "a compaction runs"
    if driver.running_turn is not None or driver.accepts_next_step or driver.reserved:
        return "a reply runs"
    return None


def register_model_command(runtime: Host, front: FrontEnd | None) -> None:
    @runtime.commands.add(
        "model",
        "list the models; /model NAME switches from the next reply on",
        takes_args=True,
        usage="[NAME]",
    )
    async def _model(args: str) -> str:
        if not args:
            return model_listing(runtime)
        if args == current_model(runtime):
            return f"Already using {safe_text(args)}."
        why = busy(runtime)
        if why is not None:
            raise CommandError(
                f"not switched: {why}; /model {args} again once it is over (Esc cancels it)"
            )
        try:
            backend: Backend = choose_backend(runtime.config, os.environ, model=args)
        except ConfigError as exc:  # an unknown name lists the names there are
            raise CommandError(str(exc)) from exc
        old = runtime.use_model(backend)
        changed = getattr(front, "model_changed", None)
        if callable(changed):
            changed(backend)
        await old.aclose()
        window = backend.context_window
        return f"Now using {safe_text(backend.label)} (context window {window:,} tokens)."
