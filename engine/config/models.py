"""Named models (`models:`): which one a launch or /model uses, and the config it makes.

The entry chosen replaces `model:`'s endpoint, key, model id, context window, reply
cap and tools; everything else (timeouts, retries, provider) stays `model:`'s. Its
key is its own `api_key`, or the variable `api_key_env` names, read when it is
chosen; an entry with an endpoint of its own and neither gets no key at all, so a
key is only ever sent where it was configured to go. Errors name keys and
variables, never a key's value.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from engine.config.errors import ConfigError
from engine.config.settings import Config

TROVE_MODEL = "TROVE_MODEL"
"""The environment variable that names the model to start with (after --model)."""


class UnknownModelError(ConfigError):
    """A name that is no model of the config; the one line lists the names there are."""


def model_names(config: Config) -> list[str]:
    """The names `/model` and `--model` take: the `models:` entries, in the file's order;
    without any, the one model `model:` configures, by its model id."""
    return list(config.models) or [config.model.name]


def chosen_model(
    config: Config, env: Mapping[str, str], given: str | None = None
) -> tuple[str | None, str]:
    """The name to start with and who named it: `--model` (`given`), else $TROVE_MODEL,
    else `model.default`, else the first entry; (None, "") with nothing named and no
    entries: `model:` as it is."""
    if given:
        return given, "--model"
    if env.get(TROVE_MODEL):
        return env[TROVE_MODEL], f"${TROVE_MODEL}"
    source = str(config.source) if config.source is not None else "(no config file)"
    if config.model.default is not None:
        return config.model.default, f"{source}: model.default"
    if config.models:
        return next(iter(config.models)), f"{source}: models"
    return None, ""


def with_model(config: Config, name: str, env: Mapping[str, str], why: str = "") -> Config:
    """`config` with `model:` made the named model's (see the module docstring).

    Raises UnknownModelError for a name that is not one of `model_names`, and
    ConfigError when the entry's `api_key_env` names a variable that is not set.
    """
    prefix = f"{why}: " if why else ""
    names = model_names(config)
    if name not in names:
        listed = ", ".join(names)
        if not config.models:
            listed += "; add models: entries to the config to switch between several"
        raise UnknownModelError(f"{prefix}no model {name!r} (models: {listed})")
    entry = config.models.get(name)
    if entry is None:
        return config  # the one model of `model:`
    base = config.model
    if entry.api_key is not None:
        key: str | None = entry.api_key
    elif entry.api_key_env is not None:
        key = env.get(entry.api_key_env) or None
        if key is None:
            raise ConfigError(f"{prefix}models.{name}.api_key_env: ${entry.api_key_env} is not set")
    else:
        key = base.api_key if entry.base_url is None else None
    model = msgspec.structs.replace(
        base,
        base_url=entry.base_url or base.base_url,
        api_key=key,
        name=entry.name or name,
        context_window=entry.context_window or base.context_window,
        max_tokens=entry.max_tokens if entry.max_tokens is not None else base.max_tokens,
        tools=entry.tools or base.tools,
    )
    return msgspec.structs.replace(config, model=model)
