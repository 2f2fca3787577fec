"""The OpenAI-compatible model client: one streaming code path for every backend.

Every backend Trove supports (OpenAI, DeepSeek, vLLM, Ollama, llama.cpp, the
``local`` extra) speaks chat completions over HTTP, so the engine has exactly
one client. It always streams, so the UI can render text as it arrives and a
cancelled turn still keeps what was said. Failures become a :class:`ModelError`
whose text is one line a user can act on, never an SDK traceback.

The rooms: ``_client`` (the client and the lazy ``openai`` import),
``_stream`` (folding chunks into a completion), ``_errors`` (what a failure says).
"""

from engine.model._client import ClientFactory, ModelClient, ModelObserver, import_openai
from engine.model._errors import ContextOverflowError, ModelError
from engine.model._stream import Completion, ToolCall

__all__ = [
    "ClientFactory",
    "Completion",
    "ContextOverflowError",
    "ModelClient",
    "ModelError",
    "ModelObserver",
    "ToolCall",
    "import_openai",
]
