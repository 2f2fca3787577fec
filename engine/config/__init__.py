"""The configuration: typed settings read from YAML, the environment and defaults."""

from engine.config.errors import ConfigError
from engine.config.places import config_candidates, config_line, config_place, find_config
from engine.config.settings import (
    CompactionConfig,
    Config,
    LocalConfig,
    ModelConfig,
    ModelEntry,
    TaskContinuityConfig,
    UiConfig,
    default_home,
    key_descriptions,
    load_config,
    parse_config,
    valid_user_id,
)

__all__ = [
    "CompactionConfig",
    "Config",
    "ConfigError",
    "LocalConfig",
    "ModelConfig",
    "ModelEntry",
    "TaskContinuityConfig",
    "UiConfig",
    "config_candidates",
    "config_line",
    "config_place",
    "default_home",
    "find_config",
    "key_descriptions",
    "load_config",
    "parse_config",
    "valid_user_id",
]
