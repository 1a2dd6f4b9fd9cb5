"""`seqgrade expr-equal ANSWER EXPECTED [--symbols a,b,c]`: one expression check from the shell."""

from __future__ import annotations

import json
import sys

from grader.written.expr.checker import DEFAULT_TIMEOUT, check_equivalent

_USAGE = (
    "usage: seqgrade expr-equal ANSWER EXPECTED [--symbols a,b,c] [--timeout SECONDS]\n"
    "       seqgrade expr-equal --steps DERIVATION EXPECTED [--symbols a,b,c] "
    '[--define "h = tanh(z)"]... [--timeout SECONDS]'
)


def expr_equal_cli(argv: list[str]) -> int:
    """`seqgrade expr-equal ANSWER EXPECTED [--symbols a,b,c]`: print one JSON line.

    Arguments are scanned by hand so that an answer starting with '-' ("-x + 1") is not
    taken for an option. Exit status 0, or 2 for bad arguments (or a bad EXPECTED).
    """
    positional: list[str] = []
    symbols: list[str] | None = None
    defines: list[str] = []
    steps = False
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
        elif not only_positional and arg == "--steps":
            steps = True
        elif not only_positional and (
            arg in ("--symbols", "--timeout", "--define")
            or arg.startswith(("--symbols=", "--timeout=", "--define="))
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
            elif name == "--define":
                if "=" not in value:
                    print(f"{_USAGE}\nerror: --define wants NAME = EXPRESSION, got {value!r}",
                          file=sys.stderr)  # fmt: skip
                    return 2
                defines.append(value.strip())
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
    if steps or defines:
        return _steps_cli(positional[0], positional[1], symbols, defines, timeout)
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


def _steps_cli(
    derivation: str, expected: str, symbols: list[str] | None, defines: list[str], timeout: float
) -> int:
    """`--steps`: a derivation checked step by step, as a derivation question grades it.

    DERIVATION is one string of steps joined by `=`, or a JSON array of steps. Prints one JSON
    line: the final verdict, the share of the points the question's default rule gives, and
    every step with its state ("first", "follows", "broken", "unreadable", …).
    """
    from grader.questions import WrittenQuestion
    from grader.written.answers import AnswerFormatError
    from grader.written.derivation import chain_of, check_chain
    from grader.written.expr.checker import ExprChecker
    from grader.written.expr.errors import ExprError
    from grader.written.expr.parser import read
    from grader.written.expr.relations import declarations
    from grader.written.question import DEFAULT_STEP_SHARE

    value: str | list[str] = derivation
    if derivation.lstrip().startswith("["):
        try:
            value = json.loads(derivation)
        except json.JSONDecodeError as err:
            print(f"{_USAGE}\nerror: DERIVATION is not a JSON array: {err}", file=sys.stderr)
            return 2
    names = symbols
    if names is None:
        try:
            names = sorted(read(expected, None).symbols)
        except ExprError as err:
            print(f"{_USAGE}\nerror: EXPECTED does not parse: {err}", file=sys.stderr)
            return 2
    defined, _ = declarations(defines)
    plain = [n for n in names if n not in (defined or [])]
    question = WrittenQuestion(id="expr-equal", title="derivation", points=1.0, key="derivation",
                       answer_kind="expression", expected=lambda v: expected,
                       symbols=(*plain, *(defined or [])), relations=tuple(defines),
                       steps=True)  # fmt: skip
    try:
        chain = chain_of(value, question)
    except AnswerFormatError as err:
        print(json.dumps({"equivalent": False, "error": str(err), "steps": []}))
        return 0
    with ExprChecker(timeout=timeout) as checker:
        checked = check_chain(question, chain, expected, [], checker)
    share = 1.0 if checked.final_correct and checked.unbroken else (
        DEFAULT_STEP_SHARE if checked.final_correct else 0.0)  # fmt: skip
    problem = checked.first_problem
    print(
        json.dumps(
            {
                "equivalent": checked.final_correct,
                "error": checked.final_error,
                "share": share,
                "first_problem": None if problem is None else problem.step.number,
                "label": chain.label,
                "steps": [
                    {
                        "step": r.step.number,
                        "text": r.step.text,
                        "defines": r.step.defines,
                        "state": r.state,
                        "interpreted": r.shown,
                        "error": r.error,
                    }  # fmt: skip
                    for r in checked.steps
                ],
            }
        )
    )
    return 0
