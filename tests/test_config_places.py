"""Where the config file is read from: the platform's config dir first, then the data dir,
and `trove --help` says which one (issue 28, point 6)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from devtools import scripted_server as s
from engine.config import ConfigError, config_candidates, load_config
from tests.cli_support import trove, write_config


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_the_config_dir_is_read_first_then_the_data_dir(tmp_path: Path, own_config_dir: Path):
    home = tmp_path / "home"
    in_config_dir = own_config_dir / "trove" / "config.yaml"
    assert config_candidates(home) == (in_config_dir, home / "config.yaml")
    assert load_config(None, home=home, env={}).source is None
    in_data_dir = write(home / "config.yaml", "user_id: from-data-dir\n")
    config = load_config(None, home=home, env={})
    assert config.source == in_data_dir and config.user_id == "from-data-dir"
    write(in_config_dir, "user_id: from-config-dir\n")
    config = load_config(None, home=home, env={})
    assert config.source == in_config_dir and config.user_id == "from-config-dir"
    given = write(tmp_path / "given.yaml", "user_id: given\n")
    assert load_config(given, home=home, env={}).user_id == "given"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="XDG is the Linux convention")
def test_xdg_config_home_is_honoured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "elsewhere"))
    assert config_candidates(tmp_path)[0] == tmp_path / "elsewhere" / "trove" / "config.yaml"
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "me"))
    assert config_candidates(tmp_path)[0] == tmp_path / "me" / ".config" / "trove" / "config.yaml"


def test_a_bad_file_in_the_config_dir_names_that_file(tmp_path: Path, own_config_dir: Path):
    bad = write(own_config_dir / "trove" / "config.yaml", "ui:\n  theme: 3\n")
    write(tmp_path / "home" / "config.yaml", "user_id: fine\n")
    with pytest.raises(ConfigError, match=str(bad)):
        load_config(None, home=tmp_path / "home", env={})


def test_help_says_which_config_file_is_read(tmp_path: Path, own_config_dir: Path):
    home = tmp_path / "home"
    in_config_dir = own_config_dir / "trove" / "config.yaml"
    shown = trove("--home", str(home), "--help")
    assert shown.returncode == 0, shown.stderr
    assert (
        f"config file: none (defaults); Trove reads {in_config_dir}, then {home / 'config.yaml'}"
        in " ".join(shown.stdout.split())
    )
    write(home / "config.yaml", "user_id: x\n")
    assert f"config file: {home / 'config.yaml'}" in trove("--home", str(home), "-h").stdout
    write(in_config_dir, "user_id: y\n")
    assert f"config file: {in_config_dir}" in trove("--home", str(home), "--help").stdout
    given = tmp_path / "given.yaml"
    assert f"config file: {given} (--config)" in trove("--config", str(given), "--help").stdout


def test_a_config_in_the_config_dir_is_what_trove_runs_with(
    tmp_path: Path, own_config_dir: Path, server: s.ScriptedServer
):
    (own_config_dir / "trove").mkdir(parents=True)
    write_config(own_config_dir / "trove" / "config.yaml", server.base_url)
    server.script(s.text("read from the config dir"))
    result = trove("--home", str(tmp_path / "home"), "-p", "hello")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "read from the config dir"


def test_ui_max_width_is_a_column_count_or_the_whole_width(tmp_path: Path):
    assert load_config(None, home=tmp_path, env={}).ui.max_width == 100
    for text, expected in (("0", 0), ("null", None), ("160", 160)):
        path = write(tmp_path / f"{text}.yaml", f"ui:\n  max_width: {text}\n")
        assert load_config(path, home=tmp_path, env={}).ui.max_width == expected
    for bad in ("-1", "wide", "1.5"):
        path = write(tmp_path / "bad.yaml", f"ui:\n  max_width: {bad}\n")
        with pytest.raises(ConfigError, match="ui.max_width"):
            load_config(path, home=tmp_path, env={})
