"""Where Trove looks for its config file, and how to say which one it read.

The platform's config directory comes first (`~/.config/trove/config.yaml` on
Linux, `$XDG_CONFIG_HOME` honoured, through platformdirs), then the data
directory, where earlier versions only looked. `--config FILE` replaces both.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from engine.config.errors import ConfigError

CONFIG_NAME = "config.yaml"


def config_dir_file() -> Path:
    """`config.yaml` in the platform's config directory for Trove."""
    import platformdirs  # only when no --config says where

    return Path(platformdirs.user_config_dir("trove", appauthor=False)) / CONFIG_NAME


def config_candidates(home: Path) -> tuple[Path, ...]:
    """Where a config file is looked for without --config, in order."""
    first, second = config_dir_file(), Path(home) / CONFIG_NAME
    return (first,) if first == second else (first, second)


def find_config(candidates: Sequence[Path]) -> Path | None:
    """The first candidate that exists (a dangling link too: reading it says why); None."""
    for candidate in candidates:
        try:
            if candidate.exists() or candidate.is_symlink():
                return candidate
        except OSError as exc:
            raise ConfigError(f"{candidate}: cannot read config file: {exc.strerror}") from None
    return None


def config_place(
    read: Path | None, candidates: Sequence[Path], label: Callable[[Path], str] = str
) -> str:
    """One line: the file read, or that none was and where one would be read from
    (`label` writes a path for the user, with `~` for the home, say)."""
    if read is not None:
        return f"config file: {label(read)}"
    where = ", then ".join(label(c) for c in candidates)
    return f"config file: none (defaults); Trove reads {where}"


def config_line(given: Path | None, home: Path) -> str:
    """What `trove --help` ends with: the config file a run with these options reads."""
    if given is not None:
        return f"config file: {given} (--config)"
    candidates = config_candidates(home)
    try:
        found = find_config(candidates)
    except ConfigError as exc:
        return str(exc)
    return config_place(found, candidates)
