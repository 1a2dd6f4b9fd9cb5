"""The `seqgrade` command. Imports stay lazy: `seqgrade --help` must not pay for numpy or torch."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _parser() -> (
    argparse.ArgumentParser
):  # over 60 lines: one declaration per option, read top to bottom
    from grader import __version__

    p = argparse.ArgumentParser(
        prog="seqgrade",
        description="Grade submissions for the sequence-models course: hidden tests, named misconceptions, "
        "symbolic answers, a sandbox.",
    )
    p.add_argument("--version", action="version", version=f"seqgrade {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    sub.add_parser("list", help="the assignments, their questions and points")

    g = sub.add_parser("grade", help="grade one submission folder or zip")
    g.add_argument("submission", type=Path, help="a folder or a .zip holding the student's files")
    g.add_argument(
        "-a", "--assignment", required=True, help="a1 … a7 or a full id such as a1_word_vectors"
    )
    g.add_argument(
        "--results",
        type=Path,
        help="write a Gradescope results.json here (- for stdout, instead of the table)",
    )
    g.add_argument(
        "--student",
        metavar="KEY",
        help="the student's variant key (their email, or their SID where "
        "the assignment uses it): selects their hidden numbers; without it, the default variant",
    )
    g.add_argument(
        "--format", choices=("table", "md", "json"), default="table", help="what to print"
    )
    g.add_argument(
        "--overrides",
        type=Path,
        metavar="FILE",
        help="the assignment's overrides (TOML or CSV, docs/term.md): those naming this student "
        "(--student KEY or the submission's name) are applied after grading",
    )
    g.add_argument(
        "--term",
        type=Path,
        metavar="FILE",
        help="the term file (term.toml: late policy, due dates, roster, overrides folder)",
    )
    g.add_argument(
        "--submitted",
        metavar="DATE",
        help="when the submission was made (ISO 8601 with a time zone, 2026-09-19T10:00:00-04:00), "
        "for the term's late policy",
    )
    g.add_argument(
        "--instructor",
        action="store_true",
        help="show every hidden case in full (the inputs, what came back, the student's line) "
        "and what the code printed: for instructors' eyes only",
    )

    b = sub.add_parser("batch", help="grade every submission under a folder, in parallel")
    b.add_argument(
        "root", type=Path, help="a folder of submission folders or zips (or a Gradescope export)"
    )
    b.add_argument(
        "-a", "--assignment", required=True, help="a1 … a7 or a full id such as a1_word_vectors"
    )
    b.add_argument(
        "--jobs", type=int, default=None, help="parallel workers (default: the number of cores)"
    )
    b.add_argument(
        "--out",
        type=Path,
        default=Path("grades.csv"),
        help="the gradebook CSV (default grades.csv); results.json files go to <name>_results/ "
        "beside it. - writes the CSV to stdout (results then in ./grades_results/)",
    )
    b.add_argument(
        "--gradebook",
        choices=("seqgrade", "canvas", "gradescope"),
        default="seqgrade",
        help="the CSV's columns: seqgrade (key, name, email, SID, total, every question), canvas "
        "(Canvas's gradebook import) or gradescope (Email, Score: an assignment's score upload)",
    )
    b.add_argument(
        "--round",
        type=int,
        default=2,
        metavar="N",
        dest="digits",
        help="decimals of the scores in the CSV (default 2)",
    )
    b.add_argument("--report", type=Path, default=None, help="a self-contained HTML class report")
    b.add_argument(
        "--cluster",
        metavar="ADDRESS",
        default=None,
        help="grade each submission as a task on a dask.distributed cluster: a scheduler's "
        "address (tcp://HOST:8786; its workers need the same seqgrade installed and must see "
        "ROOT and the results folder at the same paths) or local:N to start N workers here; "
        "needs the optional extra seqgrade[cluster]",
    )
    b.add_argument(
        "--force",
        action="store_true",
        help="regrade every submission whole, even one whose stored "
        "result still holds (same submission, suite, catalog, reference and grader version)",
    )
    b.add_argument(
        "--only",
        metavar="QID[,QID]",
        default=None,
        help="regrade only these questions (ids such as a4.encoder_block or encoder_block, or numbers "
        "from seqgrade list) of each stored result, keeping its other questions; a submission "
        "without a stored result is graded whole",
    )
    b.add_argument(
        "--term",
        type=Path,
        metavar="FILE",
        help="the term file (term.toml): late policy, due dates, roster with extensions, late-day "
        "ledger, overrides folder (docs/term.md)",
    )
    b.add_argument(
        "--overrides",
        type=Path,
        metavar="FILE",
        help="this assignment's overrides (TOML or CSV: student, question, score or delta, comment, "
        "who, when); default: <a1 … a7>.toml in the term's overrides folder",
    )
    b.add_argument(
        "--diff",
        action="store_true",
        help="print whose scores changed since the stored results, per question (old → new), and "
        "write them to <out>_diff.csv",
    )
    b.add_argument(
        "--anonymise",
        "--anonymize",
        action="store_true",
        help="blind review: stable pseudonyms instead of names, emails, SIDs and folders in the CSV "
        "and the report; the private mapping goes to <out>_pseudonyms.csv",
    )
    b.add_argument(
        "--quiet",
        action="store_true",
        help="no progress bar and no 'class report:' line; the summary line and errors are still shown",
    )

    e = sub.add_parser("expr-equal", help="are two expressions equal? prints one JSON line")
    e.add_argument(
        "answer", help='the student\'s expression, e.g. "1/sqrt(d_k)" or LaTeX between $…$'
    )
    e.add_argument("expected", help="the expected expression")
    e.add_argument(
        "--symbols", default=None, help="comma-separated symbols (default: those of EXPECTED)"
    )
    e.add_argument(
        "--steps",
        action="store_true",
        help="ANSWER is a derivation (steps joined by =, or a JSON array): check it step by step",
    )
    e.add_argument(
        "--define",
        action="append",
        default=None,
        metavar="'NAME = EXPRESSION'",
        help="a defined name the steps may use (repeatable), e.g. 'h = tanh(z)'",
    )

    h = sub.add_parser("handout", help="the student bundle of an assignment")
    h.add_argument("assignment", help="a1 … a7 or a full id")
    h.add_argument(
        "--out",
        type=Path,
        default=None,
        help="the zip to write (- for stdout); with --notebook, the notebook (default <stem>.ipynb)",
    )
    h.add_argument(
        "--notebook", action="store_true", help="the handout as one Jupyter notebook instead"
    )
    h.add_argument(
        "--term",
        type=Path,
        default=None,
        help="with --notebook: the time limits the notebook states are this term file's "
        "[limits] (docs/term.md), as the bundle built with the same --term grades",
    )

    a = sub.add_parser("autograder", help="the Gradescope autograder bundle of an assignment")
    a.add_argument("assignment", help="a1 … a7 or a full id")
    a.add_argument("--out", type=Path, required=True, help="the zip to write (- for stdout)")
    a.add_argument(
        "--term",
        type=Path,
        metavar="FILE",
        help="carry the term file, its roster and ledger and this assignment's overrides in the "
        "bundle: the container then applies the same late policy and overrides as a batch",
    )

    c = sub.add_parser(
        "check",
        help="validate an assignment as authored (catalog ids, mutants told apart, "
        "solution full and stub zero, nothing hidden in the handout, public tests pass)",
    )
    c.add_argument("assignment", help="a1 … a7 or a full id")

    d = sub.add_parser(
        "demo", help="grade the bundled samples (a solution, a buggy and a hostile submission)"
    )
    d.add_argument(
        "-a", "--assignment", default=None, help="which assignment's samples (default: all bundled)"
    )
    return p


def run() -> None:
    """The `seqgrade` command as a process: `main()`, then an exit without the interpreter's
    teardown. Threads are joined and the exit handlers registered from here on run (temporary
    folders, warm templates) as in any exit; what is skipped is the freeing of every module and
    object, which the system does at once (in a single grade, 40-100 ms after the results were
    written: a third of a peer's whole run). Every file the grader writes is closed before
    `main` returns."""
    import atexit
    import os

    from grader.sandbox.runtime import one_thread

    code: list[int] = [EXIT_FAILED]  # an exception that escapes main: Python's traceback, then 1

    def finish() -> None:  # registered first, so it runs after every other exit handler
        from grader import dataclass_cache

        dataclass_cache.install().save()  # its own exit handler would never run: os._exit
        for stream in (sys.stdout, sys.stderr):
            try:  # noqa: SIM105
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code[0])

    atexit.register(finish)
    one_thread()  # BLAS on one thread, before anything loads numpy
    if sys.argv[1:2] == ["grade"]:
        import gc

        gc.disable()  # until the grade's imports are done (`_collect_from_here`)
    try:
        code[0] = main()
    except SystemExit as exc:  # argparse's --help and usage errors, and sys.exit anywhere
        if exc.code is None or isinstance(exc.code, int):
            code[0] = (exc.code or 0) & 0xFF
        else:
            print(exc.code, file=sys.stderr)
            code[0] = EXIT_FAILED
    sys.exit(code[0])


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["expr-equal"] and not {"-h", "--help"} & set(argv[1:]):
        # An answer may start with "-" ("-u_o + p_o u_o"): the checker reads its own arguments.
        from grader.app.expr_equal import expr_equal_cli

        return expr_equal_cli(argv[1:])
    # a single grade's template starts first: numpy loads in it while the parser is built and
    # the grader and the suite are imported here
    early = (
        argv[:1] == ["grade"]
        and not {"-h", "--help"} & set(argv)
        and _prestart_worker(_assignment_given(argv[1:]))
    )
    args = _parser().parse_args(argv)
    if args.command is None:
        _parser().print_help()
        return EXIT_USAGE
    mixed = mixed_install()
    if mixed:
        print(f"seqgrade: {mixed}", file=sys.stderr)
        return EXIT_USAGE
    if getattr(args, "assignment", None):  # every command takes a1 … a7 or a full id
        from grader.course import registry

        try:
            args.assignment = registry.resolve_id(args.assignment)
        except registry.UnknownAssignment as err:
            print(f"seqgrade: {err}", file=sys.stderr)
            _write_error(getattr(args, "results", None), None, str(err))
            return EXIT_USAGE
    if args.command == "grade" and not early:
        _prestart_from_registry(args.assignment)
    try:
        return _COMMANDS[args.command](args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_FAILED
    except BrokenPipeError:  # `seqgrade list | head`: the reader left, nothing is wrong
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK


def mixed_install() -> str | None:
    """Why this run would mix two copies of seqgrade (the grader from one checkout, `reference/`
    from another installed copy), or None. Found without importing either (no cost to --help)."""
    import importlib.util

    here = Path(__file__).resolve().parents[2]  # the folder holding this grader package
    spec = importlib.util.find_spec("reference")
    if spec is None or not spec.origin:
        return None
    theirs = Path(spec.origin).resolve().parents[1]
    if theirs == here:
        return None
    return (
        f"this grader ({here / 'grader'}) would use the trusted reference of another copy "
        f"({theirs / 'reference'}); install this copy editable (python -m pip install -e .) or "
        "run the other copy's seqgrade (docs/authoring.md, 'Working in a clone')"
    )


def _assignment_given(args: list[str]) -> str:
    """The value of `-a`/`--assignment` in a command's arguments, read before argparse reads
    them (an unreadable one: "", which no shipped fact names)."""
    for i, arg in enumerate(args):
        if arg in ("-a", "--assignment"):
            return args[i + 1] if i + 1 < len(args) else ""
        if arg.startswith("--assignment="):
            return arg.split("=", 1)[1]
        if arg.startswith("-a") and not arg.startswith("--"):
            return arg[2:]
    return ""


def _prestart_from_registry(aid: str) -> None:
    """`_prestart_worker` for a suite the shipped facts do not know yet (the registry decides)."""
    from grader.course import registry
    from grader.sandbox import runtime, zygote

    if zygote.wanted():
        zygote.prestart(runtime.preload(registry.preloads_torch(aid)))


def _prestart_worker(name: str) -> bool:
    """A single grade: the sandbox's warm template for the assignment (numpy, or numpy and torch,
    decided once from the registry's shipped facts, read here without importing the registry)
    starts importing now, on another core, while this process imports the grader and the suite
    (SEQGRADE_WARM=0: a fresh worker). False when the shipped facts do not know the name: the
    registry then resolves it (or says what is wrong) and `_prestart_from_registry` starts it."""
    import os

    if os.environ.get("SEQGRADE_WARM", "1").strip().lower() in ("0", "off", "no", "false"):
        return True  # zygote.wanted(), without importing the sandbox for nothing: cold starts
    preload = _shipped_preload(name)
    if preload is None:
        return False
    from grader.sandbox import zygote

    zygote.prestart(preload)
    return True


def _shipped_preload(name: str) -> tuple[str, ...] | None:
    """What a grade of `name` preloads (`runtime.preload`), from the shipped facts alone, or None
    when they cannot say (the registry then decides: `registry.preloads_torch`)."""
    key = name.strip().lower()
    facts_file = Path(__file__).resolve().parents[1] / "course" / "suite_facts.json"
    try:
        facts = json.loads(facts_file.read_text())
    except (OSError, ValueError):
        return None
    found = [aid for aid in facts if key == aid or key == aid.split("_", 1)[0]]
    if len(found) != 1 or not isinstance(facts[found[0]], dict):
        return None
    from grader.sandbox.runtime import preload

    return preload(bool(facts[found[0]].get("preload_torch")))


def cmd_list(args: argparse.Namespace) -> int:
    from grader.course import registry

    for aid in registry.available():
        a = registry.load(aid)
        print(f"{aid} ({aid.split('_')[0]}): {a.title} — {a.total_points:g} points")
        for i, q in enumerate(a.questions, 1):
            target = f"{q.function}()" if q.kind == "code" else f"answers.toml: {q.key}"
            print(f"  {i:>2}. {q.id:<30} {q.title:<52} {q.points:>5g}  [{target}]")
    missing = [aid for aid in registry.ASSIGNMENT_IDS if aid not in registry.available()]
    if missing:
        print(f"(not installed: {', '.join(missing)})")
    return EXIT_OK


def cmd_grade(args: argparse.Namespace) -> int:
    from grader.course import registry

    aid = args.assignment
    to_stdout = str(args.results) == "-"  # `--results -`: the results.json on stdout, not the table
    if not args.submission.exists():
        print(f"seqgrade: the submission {args.submission} does not exist", file=sys.stderr)
        _write_error(args.results, aid, f"the submission {args.submission} does not exist")
        return EXIT_USAGE
    try:
        from grader.engine.grade import grade_submission
        from grader.reports import render
        from grader.reports.results_json import to_gradescope, write_results

        assignment = registry.load(aid)
        _collect_from_here()
        hide = (args.results.resolve().parent,) if args.results and not to_stdout else ()
        from grader.course.variants import variant_key

        key = variant_key(assignment.variant_key, explicit=args.student)
        if key.value is None:
            print(
                "seqgrade: no --student KEY given: graded with the default variant", file=sys.stderr
            )
        known = _term(args)
        decision = _staff_decision(args, assignment.id, key.value, known)
        report = grade_submission(
            args.submission, assignment, student=key.value, hide=hide, limits=_term_limits(known)
        )
        data = to_gradescope(report, key, assignment)
        if decision is not None:
            from grader.course import adjust

            data = adjust.apply(data, decision)
        if args.results and not to_stdout:
            write_results(args.results, data)
    except _BadStaffFile as err:
        print(f"seqgrade: {err}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:  # noqa: BLE001 - the grader itself failed: say so, write a valid file
        _write_error(args.results, aid, f"{type(exc).__name__}: {exc}")
        print(f"seqgrade: the grader failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_FAILED
    adjustments = data.get("extra_data", {}).get("adjustments")
    if args.format == "json" or to_stdout:
        print(json.dumps(data, indent=2))
    elif args.format == "md":
        print(render.markdown(report, instructor=args.instructor, adjustments=adjustments))
    else:
        print(
            render.table(
                report,
                colour=render.use_colour(),
                submission=str(args.submission),
                options=_feedback_options(args),
            )
        )
        if adjustments:
            print(_adjustment_note(adjustments))
    if report.grader_error:
        print(
            f"seqgrade: the grader failed on part of this submission: {report.grader_error}",
            file=sys.stderr,
        )
        return EXIT_FAILED
    return EXIT_OK


def _feedback_options(args: argparse.Namespace) -> list[str]:
    """The options of this grade that the full feedback must be given again to read the same:
    the staff's adjustments and when the work was handed in."""
    given = [
        ("--term", args.term),
        ("--overrides", args.overrides),
        ("--submitted", args.submitted),
    ]
    return [word for option, value in given if value is not None for word in (option, str(value))]


def _collect_from_here() -> None:
    """A single grade's imports are done: what they made lives as long as the process, so the
    cyclic collector, off while they ran (`run`), leaves them out from now on (`gc.freeze`) and
    resumes over what grading makes. Its passes over the imports cost a grade about 20 ms."""
    import gc

    if not gc.isenabled():
        gc.freeze()
        gc.enable()


class _BadStaffFile(Exception):
    """A term or overrides file given to `seqgrade grade` that cannot be used (message ready)."""


def _term(args: argparse.Namespace):
    """The term file `seqgrade grade --term` names (grader.course.term.Term), or None."""
    if args.term is None:
        return None
    from grader.course import term

    try:
        return term.load(args.term)
    except term.TermError as err:
        raise _BadStaffFile(str(err)) from None


def _term_limits(known):
    """The sandbox's limits a term file sets (its `[limits]` over the defaults), or None for
    the defaults: grader.sandbox.Limits."""
    if known is None or not known.limits:
        return None
    from grader import sandbox

    return sandbox.Limits(**known.limits)


def _staff_decision(args: argparse.Namespace, assignment_id: str, key: str | None, known):
    """The overrides and late verdict `seqgrade grade` applies, or None when none was asked for;
    `known`: the term file's Term, already read."""
    if args.overrides is None and known is None:
        return None
    from grader.course import adjust, late, overrides
    from grader.course.registry import load

    try:
        path = args.overrides or (known.overrides_file(assignment_id) if known else None)
        found = overrides.load(path, load(assignment_id)) if path else ()
        submitted = late.parse_date(args.submitted, "--submitted")
        ledger = late.read_ledger(known.ledger_path) if known and known.ledger_path else None
    except (overrides.OverrideError, late.LateError) as err:
        raise _BadStaffFile(str(err)) from None
    keys = {k.lower() for k in (key, args.submission.name, args.submission.stem) if k}
    return adjust.decide(known, found, assignment_id, keys, submitted, ledger=ledger)


def _adjustment_note(adjustments: dict) -> str:
    lines = [f"adjusted score: {adjustments['score']:g} (graded {adjustments['raw_score']:g})"]
    lines += [
        f"  override {o['question']}: {o['before']:g} → {o['after']:g}"
        + (f" ({o['comment']})" if o["comment"] else "")
        for o in adjustments.get("overrides", [])
    ]
    if (adjustments.get("late") or {}).get("message"):
        lines.append(f"  {adjustments['late']['message']}")
    return "\n".join(lines)


def _write_error(path: Path | None, aid: str | None, message: str) -> None:
    if path is None:
        return
    from grader.reports.results_json import error_results, write_results

    if str(path) == "-":
        print(json.dumps(error_results(aid, message), indent=2))
        return

    try:
        write_results(path, error_results(aid, message))
    except OSError as err:
        print(f"seqgrade: could not write {path}: {err}", file=sys.stderr)


def cmd_batch(args: argparse.Namespace) -> int:
    from grader.app import batch

    if not args.root.is_dir():
        print(f"seqgrade: {args.root} is not a folder", file=sys.stderr)
        return EXIT_USAGE
    options = {name: getattr(args, name) for name in BATCH_OPTIONS}
    return batch.run(args.root, args.assignment, **options)


BATCH_OPTIONS = (
    "jobs",
    "out",
    "report",
    "force",
    "gradebook",
    "digits",
    "quiet",
    "only",
    "cluster",
    "term",
    "overrides",
    "diff",
    "anonymise",
)
"""`seqgrade batch`'s options, each passed to `batch.run` under its own name."""


def cmd_handout(args: argparse.Namespace) -> int:
    from grader.app import bundles

    if args.notebook:
        from grader.app import notebook_handout

        try:
            known = _term(args)
        except _BadStaffFile as err:
            print(f"seqgrade: {err}", file=sys.stderr)
            return EXIT_USAGE
        print(f"wrote {notebook_handout.write(args.assignment, args.out, _term_limits(known))}")
        return EXIT_OK
    if args.term is not None:
        print(
            "seqgrade: handout --term is for --notebook (the limits its text states)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    if args.out is None:
        print("seqgrade: handout needs --out FILE.zip (or --notebook)", file=sys.stderr)
        return EXIT_USAGE
    return _bundle(bundles.build_handout, args.assignment, args.out)


def cmd_autograder(args: argparse.Namespace) -> int:
    from functools import partial

    from grader.app import bundles

    if args.term is None:
        return _bundle(bundles.build_autograder, args.assignment, args.out)
    from grader.course import term

    try:
        extra = term.bundle_files(args.term, args.assignment)
    except (term.TermError, OSError) as err:
        print(f"seqgrade: {err}", file=sys.stderr)
        return EXIT_USAGE
    return _bundle(partial(bundles.build_autograder, extra=extra), args.assignment, args.out)


def _bundle(build, assignment: str, out: Path) -> int:
    """Build a zip at `out`, or on stdout for `--out -` (built in a temporary folder, then streamed)."""
    if str(out) != "-":
        print(f"wrote {build(assignment, out)}")
        return EXIT_OK
    import tempfile

    with tempfile.TemporaryDirectory(prefix="seqgrade-") as tmp:
        path = build(assignment, Path(tmp) / f"{assignment}.zip")
        sys.stdout.flush()
        sys.stdout.buffer.write(Path(path).read_bytes())
        sys.stdout.buffer.flush()
    return EXIT_OK


def cmd_check(args: argparse.Namespace) -> int:
    from grader.app import check

    return check.run(args.assignment)


def cmd_demo(args: argparse.Namespace) -> int:
    from grader.app import demo

    return demo.run(args.assignment)


_COMMANDS = {
    "list": cmd_list,
    "grade": cmd_grade,
    "batch": cmd_batch,
    "handout": cmd_handout,
    "autograder": cmd_autograder,
    "demo": cmd_demo,
    "check": cmd_check,
}
