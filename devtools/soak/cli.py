"""The soak's command line: its arguments, the run, the one result line and the exit status."""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

from devtools.soak.run import Soak


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m devtools.soak", description="Random SIGKILLs against trove --plain."
    )
    parser.add_argument("--kills", type=int, default=300, help="SIGKILLs to deliver (300)")
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: random)")
    parser.add_argument("--home", type=Path, default=None, help="data dir (default: a temp dir)")
    parser.add_argument("--verbose", action="store_true", help="one stderr line per round")
    args = parser.parse_args(argv)
    if args.kills < 1:
        parser.error("--kills must be at least 1")
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(2**32)
    print(f"[soak] seed {args.seed}", file=sys.stderr, flush=True)
    counts = Soak(args).run()
    print(counts.line(), flush=True)
    return 0 if counts.clean else 1
