"""The `trove` command line: parse, load config, hand off to a front end.

Usage errors and bad config exit 2 with one line; runtime failures exit 1
with one line. No front end is imported before it is chosen, so `trove
threads` never pays for Textual and nothing pays for `openai` at start-up.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from engine.config import Config

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        """One line, not a usage block: the user needs what and where."""
        self.exit(EXIT_USAGE, f"trove: {message} (see trove --help)\n")


def _count(text: str) -> int:
    """A whole number, 0 or more (argparse turns the ValueError into one usage line)."""
    value = int(text)
    if value < 0:
        raise ValueError(text)
    return value


_count.__name__ = "count"  # argparse names the type in its message: "invalid count value"


def _common(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    """Common options, accepted before or after the subcommand.

    The subcommand copies default to SUPPRESS so they never overwrite a
    value given before the subcommand.
    """
    default = argparse.SUPPRESS if suppress else None
    parser.add_argument("--home", type=Path, default=default, help="data directory")
    parser.add_argument("--config", type=Path, default=default, help="config file")
    parser.add_argument("--user", default=default, help="user id (default from config)")
    parser.add_argument(
        "--thread",
        default=default,
        help="the thread: its id, a unique prefix of it, or its number in `trove threads`",
    )


class _Version(argparse.Action):
    """`--version`: the installed distribution's version, looked up only when asked."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            number = version("trove")
        except PackageNotFoundError:  # run from a checkout that was never installed
            number = "unknown (not installed)"
        print(f"trove {number}")
        parser.exit(EXIT_OK)


class _Help(argparse.Action):
    """-h/--help, ending with the config file a run with the options before it reads."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(
            option_strings, argparse.SUPPRESS, nargs=0, default=argparse.SUPPRESS, **kwargs
        )

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        from engine.config import config_line, default_home

        namespace = args[0]
        parser.epilog = config_line(namespace.config, namespace.home or default_home())
        parser.print_help()
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="trove",
        description="A terminal chat app that never loses what it compacts.",
        add_help=False,
        formatter_class=argparse.RawDescriptionHelpFormatter,  # the config line unwrapped
    )
    parser.add_argument("-h", "--help", action=_Help, help="show this help and the config file")
    parser.add_argument("--version", action=_Version)
    _common(parser, suppress=False)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--plain", action="store_true", help="plain prompt-toolkit REPL")
    mode.add_argument(
        "-p",
        "--prompt",
        metavar="TEXT",
        help="one turn, answer on stdout, exit; piped stdin is appended; - reads it all",
    )
    parser.add_argument(
        "-c",
        "--continue",
        dest="resume_latest",
        action="store_true",
        help="reopen the thread with the newest message",
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "--local", action="store_true", help="use the offline local model (the local extra)"
    )
    which.add_argument(
        "--model",
        metavar="NAME",
        help="one of the config's models: entries (else $TROVE_MODEL, else model.default)",
    )
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
    threads = sub.add_parser("threads", help="list threads of the user")
    _common(threads, suppress=True)
    threads.add_argument("--json", action="store_true", help="a list of objects, for scripts")
    history = sub.add_parser("history", help="search or read a thread's archive")
    _common(history, suppress=True)
    hsub = history.add_subparsers(dest="history_command", required=True, parser_class=_Parser)
    search = hsub.add_parser("search", help="search archive and active history")
    _common(search, suppress=True)
    search.add_argument("query")
    search.add_argument("--role", choices=["user", "assistant", "tool"])
    search.add_argument("--json", action="store_true")
    search.add_argument(
        "--all", action="store_true", help="every thread of the user, grouped by thread"
    )
    search.add_argument(
        "--max-threads",
        type=_count,
        default=None,
        metavar="N",
        help="with --all: stop at N threads with matches (default 10; 0: no limit)",
    )
    read = hsub.add_parser("read", help="print one source, paged")
    _common(read, suppress=True)
    read.add_argument("source_id")
    read.add_argument("--offset", type=int, default=0)
    read.add_argument("--json", action="store_true")
    notes = sub.add_parser("notes", help="print the thread's task notes")
    _common(notes, suppress=True)
    notes.add_argument("--json", action="store_true")
    doctor = sub.add_parser("doctor", help="check a thread's files; repair its log")
    _common(doctor, suppress=True)
    doctor.add_argument("doctor_thread", nargs="?", metavar="THREAD", help="the thread")
    doctor.add_argument("--json", action="store_true")
    return parser


# Options that take a value, wherever they may appear before a search query.
_VALUE_OPTIONS = {
    *("--home", "--config", "--user", "--thread", "--model"),
    *("-p", "--prompt", "--role", "--offset", "--max-threads"),
}
_SEARCH_FLAGS = {"--json", "--all", "-h", "--help"}


def _dash_query(argv: list[str]) -> list[str]:
    """`history search -WORD`: move a dash-led query behind `--` so argparse takes it.

    argparse reads any `-WORD` as an option. When `history search` has no
    other query and exactly one word it does not know as an option, that
    word is the query; it goes to the end after `--` (the query is the last
    positional, so the other options still parse). `--` given by the user
    is left alone, as is anything ambiguous (argparse then reports it).
    """
    if "--" in argv:
        return argv
    positionals: list[str] = []
    dashed: list[int] = []
    index = 0
    while index < len(argv):
        word = argv[index]
        name = word.split("=", 1)[0]
        if name in _VALUE_OPTIONS:
            index += 1 if "=" in word else 2
            continue
        if word.startswith("-") and len(word) > 1:
            if name not in _SEARCH_FLAGS and positionals[:2] == ["history", "search"]:
                dashed.append(index)
        else:
            positionals.append(word if len(positionals) < 2 else "query")
        index += 1
    if positionals[:2] != ["history", "search"] or len(positionals) > 2 or len(dashed) != 1:
        return argv
    query = argv[dashed[0]]
    if any(known.startswith(query) for known in (*_VALUE_OPTIONS, *_SEARCH_FLAGS)):
        return argv  # an abbreviated option (argparse accepts unique prefixes)
    return [*argv[: dashed[0]], *argv[dashed[0] + 1 :], "--", query]


def _fail(message: str, code: int) -> int:
    from engine.util.safe_text import safe_text  # the message may quote a log, a file or a server

    print(f"trove: {safe_text(message)}", file=sys.stderr)
    return code


def _chosen_thread(args: argparse.Namespace, config: Config, home: Path) -> str | None:
    """The thread `--thread` names (an id, a prefix, a list number) or `--continue` means
    (the one with the newest message); None for a new thread. Raises ThreadNotFoundError."""
    from engine.threads.paths import ThreadNotFoundError
    from engine.workspace.listing import latest_thread, resolve_thread

    if getattr(args, "resume_latest", False):
        if args.thread:
            raise ThreadNotFoundError("--continue reopens the newest thread: leave out --thread")
        latest = latest_thread(home, config.user_id)
        if latest is None:
            raise ThreadNotFoundError(f"no thread to continue for user {config.user_id!r}")
        return latest
    if not args.thread:
        return None
    return resolve_thread(home, config.user_id, args.thread)


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(_dash_query(words))
    from engine.config import ConfigError, default_home, load_config
    from engine.errors import TroveError
    from engine.log import LogCorruptError
    from engine.threads.paths import ThreadNotFoundError

    home: Path = args.home or default_home()
    try:
        config = load_config(args.config, home=home)
    except ConfigError as exc:
        return _fail(str(exc), EXIT_USAGE)
    if args.user is not None:
        from engine.config import valid_user_id

        if not valid_user_id(args.user):
            return _fail(f"--user: invalid user id {args.user!r}", EXIT_USAGE)
        config = config.with_user(args.user)
    try:
        args.thread = _chosen_thread(args, config, home)
    except ThreadNotFoundError as exc:
        return _fail(str(exc), EXIT_USAGE)
    backend = None
    if args.command is None:  # chat modes only: threads/history/notes need no model
        import os

        from engine.model.backend import choose_backend

        try:
            backend = choose_backend(config, os.environ, force_local=args.local, model=args.model)
        except ConfigError as exc:  # BackendError is a ConfigError: one line, exit 2
            return _fail(str(exc), EXIT_USAGE)
        tty = sys.stdin.isatty() and sys.stdout.isatty()
        if backend.kind == "none" and (args.prompt is not None or args.plain or not tty):
            return _fail(backend.message, EXIT_USAGE)
    try:
        if args.command == "threads":
            from cli.subcommands import list_threads_command

            return list_threads_command(config, home, as_json=args.json)
        if args.command == "doctor":
            from cli.subcommands import doctor_command

            return doctor_command(args, config, home)
        if args.command in ("history", "notes"):
            from cli.subcommands import archive_command

            return archive_command(args, config, home)
        if args.prompt is not None:
            from cli.oneshot import PromptUsageError, oneshot_prompt, run_oneshot, stdin_bytes

            try:  # read before the thread is opened: a slow pipe holds no lock
                prompt = oneshot_prompt(args.prompt, stdin_bytes())
            except PromptUsageError as exc:
                return _fail(str(exc), EXIT_USAGE)
            return run_oneshot(config, home, prompt, thread_id=args.thread, backend=backend)
        if args.plain or not (sys.stdin.isatty() and sys.stdout.isatty()):
            from cli.repl import run_plain

            return run_plain(config, home, thread_id=args.thread, backend=backend)
        from tui.startup.run import run_tui

        return run_tui(config, home, thread_id=args.thread, backend=backend)
    except KeyboardInterrupt:
        return 130
    except (ConfigError, ThreadNotFoundError) as exc:
        return _fail(str(exc), EXIT_USAGE)
    except LogCorruptError as exc:
        return _fail(f"{exc} (the log was not changed)", EXIT_FAILURE)
    except TroveError as exc:  # its text is the whole message
        return _fail(str(exc), EXIT_FAILURE)
    except OSError as exc:
        return _fail(f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": "), EXIT_FAILURE)


if __name__ == "__main__":
    sys.exit(main())
