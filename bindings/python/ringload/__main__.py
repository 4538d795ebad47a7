"""`python -m ringload ARGS` and the `ringload` command of the wheel: the ringload CLI.

The CLI is a program of its own (it forks, times and re-executes itself for `bench`), shipped
inside the package as ringload/_bin/ringload; this replaces the Python process with it, so its
exit status, signals and terminal are the caller's.
"""
from __future__ import annotations

import os
import sys


def cli_path() -> str:
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bin", "ringload")


def main() -> None:
    program = cli_path()
    if not os.access(program, os.X_OK):
        sys.exit(f"ringload: the command is not part of this installation ({program} is missing): "
                 "a build with the CLI (the CMake target ringload_cli) or the wheel has it")
    os.execv(program, ["ringload", *sys.argv[1:]])


if __name__ == "__main__":
    main()
