"""`seqgrade expr-equal ANSWER EXPECTED [--symbols a,b,c]`: one expression check from the shell."""

from __future__ import annotations

import json
import sys

from grader.written.expr.judge import DEFAULT_TIMEOUT, check_equivalent

_USAGE = "usage: seqgrade expr-equal ANSWER EXPECTED [--symbols a,b,c] [--timeout SECONDS]"


def expr_equal_cli(argv: list[str]) -> int:
    """`seqgrade expr-equal ANSWER EXPECTED [--symbols a,b,c]`: print one JSON line.

    Arguments are scanned by hand so that an answer starting with '-' ("-x + 1") is not
    taken for an option. Exit status 0, or 2 for bad arguments (or a bad EXPECTED).
    """
    positional: list[str] = []
    symbols: list[str] | None = None
    timeout = DEFAULT_TIMEOUT
    i = 0
    only_positional = False
    while i < len(argv):
        arg = argv[i]
        if not only_positional and arg == "--":
            only_positional = True
        elif not only_positional and arg in ("-h", "--help"):
            print(_USAGE)
            return 0
        elif not only_positional and (
            arg in ("--symbols", "--timeout") or arg.startswith(("--symbols=", "--timeout="))
        ):
            name, eq, value = arg.partition("=")
            if not eq:
                if i + 1 >= len(argv):
                    print(f"{_USAGE}\nerror: {name} needs a value", file=sys.stderr)
                    return 2
                i += 1
                value = argv[i]
            if name == "--symbols":
                symbols = [s.strip() for s in value.split(",") if s.strip()]
            else:
                try:
                    timeout = float(value)
                except ValueError:
                    timeout = -1.0
                if not 0 < timeout <= 600:
                    print(
                        f"{_USAGE}\nerror: --timeout wants seconds in (0, 600], got {value!r}",
                        file=sys.stderr,
                    )
                    return 2
        elif not only_positional and arg.startswith("--"):
            print(f"{_USAGE}\nerror: unknown option {arg}", file=sys.stderr)
            return 2
        else:
            positional.append(arg)
        i += 1
    if len(positional) != 2:
        print(
            f"{_USAGE}\nerror: expected ANSWER and EXPECTED, got {len(positional)} argument(s)",
            file=sys.stderr,
        )
        return 2
    verdict = check_equivalent(positional[0], positional[1], symbols, timeout=timeout)
    print(
        json.dumps(
            {
                "equivalent": verdict.equivalent,
                "error": verdict.error,
                "interpreted": verdict.interpreted,
            }
        )
    )
    return 2 if verdict.internal else 0
