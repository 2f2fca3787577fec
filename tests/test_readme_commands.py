"""The README's first commands: each makes its own virtual environment before pip runs,
so a Python that refuses system-wide installs (PEP 668: Debian 12, Ubuntu 23.04+) takes
them; `.ci/run` runs exactly the README's test command.

Installing takes the network and minutes, so this pins the commands' shape; the install
itself was checked by hand in a fresh clone (see the commit that made these commands).
"""

from __future__ import annotations

import re

from tests.cli_support import REPO


def _sh_blocks() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    return [block.strip() for block in re.findall(r"```sh\n(.*?)```", text, re.S)]


def test_install_and_test_commands_make_their_own_venv_first() -> None:
    install, tests = _sh_blocks()[:2]
    for command in (install, tests):
        steps = [step.strip() for step in command.split("&&")]
        assert steps[0] == "python3 -m venv .venv", command
        for step in steps[1:]:
            assert step.startswith(".venv/bin/"), f"{step!r} runs outside the venv"
    assert install.endswith(".venv/bin/trove")
    assert "pip install -e '.[local]'" in install
    assert tests.endswith(".venv/bin/python -m pytest -q -n 2")  # two workers: pytest-xdist
    assert "pip install -e '.[test]'" in tests  # which brings pytest-xdist


def test_ci_runs_the_readme_test_command() -> None:
    tests = _sh_blocks()[1]
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    assert ci[-1] == tests
