"""Shared fixtures, and the test tiers.

`python -m pytest -m "not slow"` is the developer loop (about a minute on two cores); the
full suite (`python -m pytest`, what CI runs) adds the held-out collections, the container and
packaging tests, nested pytest runs, the demo, batches, `seqgrade check`, regrades, warm
workers, the Dask cluster and the validity benchmarks' targets.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import time
import types
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

# Bytecode caches for the tests and every process they start, as Python writes them by default.
# An environment that sets PYTHONDONTWRITEBYTECODE (some CI images do) makes each of the suite's
# hundreds of processes (CLI runs, batches, nested pytest, containers) compile the grader from
# source again, and pytest rewrite every test module in every worker. Student workers are
# unaffected: the sandbox gives them an environment of its own, which writes no caches.
if os.environ.pop("PYTHONDONTWRITEBYTECODE", None):
    sys.dont_write_bytecode = False

from grader.sandbox.runtime import one_thread, runtime_paths  # noqa: E402 - it loads no numpy

# BLAS and OpenMP on one thread in the tests and every process they start, before numpy loads,
# as `seqgrade` runs (runtime.ONE_THREAD): else each of those processes starts OpenBLAS's
# spinning thread pool on cores the suite already keeps busy.
one_thread()

import pytest  # noqa: E402

from grader import sandbox  # noqa: E402
from grader.course import content, registry  # noqa: E402
from grader.engine.grade import grade_submission  # noqa: E402
from grader.questions import Assignment, CodeQuestion  # noqa: E402
from grader.records import GradeReport, QuestionResult  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FAST = sandbox.Limits(call_seconds=10.0, submission_seconds=120.0)
# Modules that are slow as a whole: whole-collection gradings, bundles, nested runs, batches.
SLOW_MODULES = {
    "test_heldout",
    "test_packaging",
    "test_demo",
    "test_batch",
    "test_gradescope",
    "test_notebook",
    "test_public_tests",
    "test_validity_a1a3a6",
    "test_validity_a2a5",
    "test_validity_a4",
    "test_check",
    "test_regrade",
    "test_sandbox_containment",
    "test_warm",
    "test_cluster",
    "test_gradebook",
    "test_mutation_targets",
}


def _per_assignment(test: str, keep: tuple[str, ...]) -> list[str]:
    """`test[aid]` for every assignment (registry's one list) but those the quick tier keeps."""
    return [f"{test}[{aid}]" for aid in registry.available() if aid not in keep]


# Single tests of the other modules that take over about a second on two cores (each measured
# on 2026-12-02; most grade whole assignments, run subprocesses or wait on a deadline): the full
# suite runs them, the developer loop (`-m "not slow"`) does not. What the loop keeps of each
# area: a sandboxed grade of every assignment (test_assignments: the stub of each and the
# solution of a6 and a7; each assignment's own test file, a1's solution for two students), the
# CLI (test_cli's grade and `python -m grader`), notebooks (an answers cell in
# test_notebook_handout, the numbers cell of a1, test_engine_notebook), a hostile submission
# contained (test_hostile's snoop.py), the sandbox (test_sandbox_spawn, test_security_*), the
# term (a grade with --term), the shortcut scans against their oracle (a5) and the import rules
# (test_architecture).
SLOW_TESTS = {
    *_per_assignment(
        "test_assignments.py::test_solution_scores_full_for_two_students",
        keep=("a6_pretraining_scale", "a7_classification_ngrams"),  # a1: its own file's
    ),
    "test_class_report.py::test_mistakes_ranked_by_points_lost_and_counted_at_their_root",
    "test_class_report.py::test_wrong_written_answers_grouped_by_what_they_show",
    "test_class_report.py::test_copy_signals_name_the_answers_and_whose_variant",
    "test_class_report.py::test_similar_code_pairs_a_disguised_copy_and_not_the_stub_or_an_independent_solution",
    "test_class_report.py::test_report_html_shows_ranking_people_and_signals",
    "test_class_report.py::test_each_students_page_shows_their_own_full_feedback",
    "test_class_report.py::test_the_statistics_csv_beside_the_report",
    "test_class_report.py::test_report_without_matplotlib_or_copydetect_keeps_its_tables",
    "test_cli.py::test_student_selects_the_variant_by_email_trimmed_and_lower_cased",
    "test_engine.py::test_correct_submission_in_three_styles_gets_full_marks[torch-float32]",
    "test_engine_stand_in.py::test_a_softmax_that_gives_no_answer_is_charged_once_not_in_skipgram[hangs]",
    "test_engine_stand_in.py::test_a_skipgram_that_hangs_by_itself_is_re_run_once_and_earns_nothing",
    "test_run_on.py::test_a_training_loop_left_at_the_top_level_is_stopped_and_the_functions_graded",
    "test_run_on.py::test_a_statement_that_waits_is_stopped_at_the_import_time_and_the_functions_graded",
    "test_feedback.py::test_the_decoder_block_names_a_mistake_of_a_shared_part",
    "test_feedback.py::test_a_fully_masked_row_is_explained_as_such",
    "test_feedback.py::test_a_student_missing_1_over_T_in_the_gradients_sees_it_in_the_table",
    "test_hidden_means_hidden.py::test_no_hidden_input_reaches_what_a_student_sees",
    "test_hostile_files.py::test_a_change_of_owner_regrades_and_the_summary_says_why",
    "test_hostile_files.py::test_a_change_of_owner_regrades_the_whole_result_even_with_only",
    *_per_assignment(
        "test_lean_parent.py::test_grading_a_solution_imports_neither_torch_nor_sympy_in_the_grader",
        keep=("a5_shapes_debugging", "a7_classification_ngrams"),
    ),
    "test_notebook_handout.py::test_a_cell_that_waits_is_not_stopped_by_the_cpu_limit",
    "test_notebook_handout.py::test_check_py_on_the_py_handout",
    "test_notebook_handout.py::test_check_py_ships_no_hidden_case_or_reference",
    "test_notebook_handout.py::test_the_handout_notebook_without_its_tags_grades_the_same",
    "test_notebook_handout.py::test_every_answers_cell_form_is_read[writefile]",
    "test_notebook_handout.py::test_every_answers_cell_form_is_read[markdown]",
    "test_notebook_handout.py::test_every_answers_cell_form_is_read[raw]",
    *_per_assignment(
        "test_notebook_handout.py::test_the_numbers_cell_prints_what_variant_py_prints",
        keep=("a1_word_vectors",),
    ),
    "test_robustness.py::test_36k_answer_keys_are_read_in_linear_time",
    "test_robustness.py::test_answers_nested_50k_deep_cost_only_their_line[arrays]",
    "test_robustness.py::test_answers_nested_50k_deep_cost_only_their_line[dotted-key]",
    "test_robustness.py::test_answers_nested_50k_deep_cost_only_their_line[inline-tables]",
    "test_robustness.py::test_huge_numbers_cost_only_their_key_within_seconds[1e7-exponent]",
    "test_robustness.py::test_huge_numbers_cost_only_their_key_within_seconds[1e999999999]",
    "test_robustness.py::test_huge_numbers_cost_only_their_key_within_seconds[5000-digit-denominator]",
    "test_robustness.py::test_huge_numbers_cost_only_their_key_within_seconds[5000-digit-fraction]",
    "test_robustness.py::test_huge_numbers_cost_only_their_key_within_seconds[5000-digit-int]",
    "test_robustness.py::test_running_past_the_budget_keeps_what_was_graded",
    "test_sandbox_spawn.py::test_isolation_costs_well_under_half_a_second",
    "test_sandbox_spawn.py::test_memory_of_all_processes_together_is_capped_when_a_cgroup_is_available",
    "test_sandbox_spawn.py::test_torch_imports_under_the_default_memory_limit",
    *_per_assignment(
        "test_speed_shortcuts.py::test_scans_and_reviews_find_what_the_plain_walk_finds",
        keep=("a5_shapes_debugging",),
    ),
    "test_speed_shortcuts.py::test_the_one_walk_lists_what_ast_walk_yields",  # every source: ~8 s
    "test_term_workflow.py::test_anonymise_gives_stable_pseudonyms_and_a_private_mapping",
    "test_term_workflow.py::test_the_override_survives_a_rerun_a_suite_edit_and_only",
    "test_term_workflow.py::test_late_policy_extensions_late_days_and_an_override_in_one_batch",
    "test_term_workflow.py::test_canvas_columns_come_from_the_roster",
    "test_term_workflow.py::test_the_container_applies_the_same_term_from_the_bundle",
    "test_term_workflow.py::test_without_a_term_or_overrides_nothing_changes",
    "test_validity_composites.py::test_a_nan_producing_slip_names_nothing",
    "test_validity_composites.py::test_each_layernorm_deviation_alone_and_together",
    "test_visibility.py::test_the_same_key_gives_the_same_numbers_as_variant_py",
    "test_similarity.py::test_renaming_alone_is_a_full_match_and_different_code_is_none",
    # Of modules other engineers own (marked here, their files untouched): over ~2 s each.
    "test_case_stability.py::test_searched_cases_are_the_pinned_ones[a3_gated_seq2seq/a3.beam_search]",
    "test_case_stability.py::test_searched_cases_are_the_pinned_ones[a1_word_vectors/a1.analogy]",
    "test_expr_corpus.py::test_fast_path_agrees_with_sympy_across_pairs",
    "test_a3_gated_seq2seq.py::test_a3_torch_float32_style_gets_full_marks",
    "test_a4_transformer.py::test_a4_torch_float32_submission_gets_full_marks",
    "test_a6_pretraining_scale.py::test_a6_parameter_counts_of_every_case_match_a_torch_built_model",
    "test_follow_through.py::test_a4_blocks_carry_two_mistakes_of_two_functions_at_once",
    # the loop keeps one of each: the carried mistakes first, the stand-in re-runs first
    "test_follow_through.py::test_a4_running_the_carried_mistakes_first_changes_no_result[attention-and-its-heads]",
    "test_follow_through.py::test_a4_running_the_carried_mistakes_first_changes_no_result[layernorm-and-ffn]",
    "test_follow_through.py::test_a4_diagnosing_after_the_stand_in_reruns_changes_no_result[shifted-and-its-heads]",
    "test_follow_through.py::test_a4_diagnosing_after_the_stand_in_reruns_changes_no_result[shifted-and-ffn]",
    # Over ~2 s in the quick tier, each covered there by a cheaper test of the same room.
    "test_mutation_followups.py::test_the_runner_reads_the_10_percent_bands_swapped_as_the_same_distribution",
    "test_mutation_followups.py::test_a4_a_helper_softmax_shifted_down_the_wrong_axis_is_not_named_in_gpt_forward",
    "test_a2_rnn_bptt.py::test_a2_torch_float32_column_style_gets_full_marks",
    "test_assignments.py::test_stub_scores_zero_cleanly[a5_shapes_debugging]",
    "test_a3_gated_seq2seq.py::test_a3_a_beam_that_keeps_every_candidate_is_docked_but_not_named",
    "test_ref_pretraining.py::test_count_equals_torch_numel[True-True-gelu-layernorm-1024]",
    "test_a4_transformer.py::test_a4_library_shortcut_costs_only_the_questions_whose_function_reaches_it",
    "test_similarity.py::test_the_stub_counts_for_nothing",
    "test_helper_packages.py::test_a_shortcut_refused_while_a_package_module_runs_names_that_file",
    # Over ~2 s (2026-12-03), each with cheaper neighbours in the quick tier: the same test's
    # other parameters, or the same assignment's conventions and mistakes in its own file.
    "test_ref_pretraining.py::test_count_equals_torch_numel[False-True-gelu-layernorm-1024]",
    "test_a5_field_and_edges.py::test_a_slip_only_the_edge_catches_is_docked[log of softmax]",
    "test_a4_masks_and_conventions.py::test_a4_field_conventions_the_handout_excludes_are_named",
    # Over 3.5 s in the quick tier (2026-12-03, second stop): the other slips of the same test
    # stay; the quick tier's two-student grades are those of the other six assignments' files.
    "test_a5_field_and_edges.py::test_a_slip_only_the_edge_catches_is_docked[min shift]",
    "test_a4_transformer.py::test_a4_two_students_get_different_cases_and_full_marks",
    # Over 2.5 s in the quick tier (2026-12-07), each with a cheaper test of the same room
    # there: a1's torch float32 file (other styles), test_security_shortcuts (a library module
    # refused), test_a_kept_output_grades_as_a_computed_one (the trusted runs kept).
    "test_a6_pretraining_scale.py::test_a6_other_style_torch_and_loops_gets_full_marks",
    "test_a3_gated_seq2seq.py::test_a3_lstm_module_is_a_library_shortcut",
    "test_trusted_runs.py::test_a_questions_combined_mistakes_are_built_once_for_a_batchs_submissions",
}


def _slow_test(item: pytest.Item) -> bool:
    """Is the test (by `file::name[params]`, or `file::name` for all its parametrizations) listed?"""
    path, _, name = item.nodeid.partition("::")  # a parameter's id may hold a "/"
    here = f"{path.rsplit('/', 1)[-1]}::{name}"
    return here in SLOW_TESTS or here.split("[", 1)[0] in SLOW_TESTS


def pytest_configure(config: pytest.Config) -> None:
    """Warm sandbox templates for the tests' gradings, as a batch has them (each grading still
    gets its own forked, isolated worker; tests/test_warm.py holds warm to cold).
    `SEQGRADE_WARM=0 python -m pytest` runs every grading cold."""
    from grader.sandbox import zygote

    zygote.enable_as_wanted()
    _share_as_a_pool_process_does(config)


def _share_as_a_pool_process_does(config: pytest.Config) -> None:
    """The tests' in-process gradings share one expression checker and one TrustedRuns per test
    process, as a batch's pool process does (`grade_submission(checker=..., runs=...)`): a test
    that passes none gets them instead of starting and stopping a checker of its own (about a
    tenth of a CPU-second each, a few hundred times) and running the reference and the mutants
    again on cases graded before (the same samples are graded in many tests). The checker
    forgets each submission's checks before the next one's; a process forked from this one goes
    back to a checker and trusted outputs per grade."""
    from grader.engine.trusted import TrustedRuns
    from grader.written.expr.checker import ExprChecker

    defaults = grade_submission.__kwdefaults__
    assert defaults is not None, "grade_submission"
    for name in ("checker", "runs"):
        assert defaults.get(name, False) is None, f"grade_submission's {name}"
    shared = ExprChecker()
    defaults.update(checker=shared, runs=TrustedRuns())
    os.register_at_fork(after_in_child=lambda: defaults.update(checker=None, runs=None))
    config.add_cleanup(shared.close)


@pytest.fixture(scope="module")
def trusted_outputs_kept() -> Any:
    """The reference's and the mutants' outputs kept across a module's tests (the TrustedRuns
    its gradings share), for the tests that call the diagnosis themselves: a module that asks
    for it runs each function once per case, as a batch's pool process does, where each
    test's every `explain` ran every mutant again (the validity modules: tens of CPU-seconds)."""
    from grader.engine.trusted import TrustedRuns, remembering

    runs = grade_submission.__kwdefaults__.get("runs") or TrustedRuns()
    with remembering(runs):
        yield runs


@pytest.fixture(autouse=True)
def _warm_as_wanted() -> Any:
    """After each test, the warm templates on or off as the suite wants them (`SEQGRADE_WARM`),
    whatever the test switched (to time or compare cold starts): else every later test file of
    that worker would grade cold, about a fifth of a CPU-second more per grading."""
    yield
    from grader.sandbox import zygote

    if zygote.enabled() != zygote.wanted():
        zygote.enable_as_wanted()


# The order the test modules are dealt out in (pyproject: --dist loadfile
# --no-loadscope-reorder: a worker takes the next module when it is nearly done with its own).
# Three workers share two cores, so a core sits idle only when two of them wait at once: on a
# sandbox's deadline, a hung submission, a kernel or pip. The modules that mostly wait (marked
# "waits": a sixth to four fifths of a core alone) are therefore dealt one at a time between
# modules that keep a core or two busy (the mutation targets, the held-out collection and
# packaging grade or install on two processes), the long ones first so that the workers finish
# together; the rest follow in collection order. Measured 2026-12-06 (each module alone, and
# the whole suite's idle time second by second): the earlier order, longest first whatever the
# module did, left 26-27 core-seconds of a run idle, most of it while four waiting modules ran
# side by side and then with test_speed_cases (15 s) dealt last; this one leaves 9-12.
DEALT_FIRST = (
    "test_packaging",
    "test_mutation_targets",
    "test_sandbox_containment",  # waits
    "test_heldout",
    "test_gradescope",
    "test_hostile",  # waits
    "test_warm",
    "test_notebook_kernel",  # waits
    "test_assignments",
    "test_hostile_files",
    "test_notebook",  # waits
    "test_validity_a4",
    "test_security_shortcuts",
    "test_hostile_gradescope",  # waits
    "test_hidden_means_hidden",
    "test_speed_cases",
    "test_notebook_handout",  # waits
    "test_regrade",
    "test_batch",
    "test_sandbox_spawn",  # waits
    "test_cluster",
    "test_public_tests",
    "test_speed_shortcuts",
    "test_check",
    "test_class_report",
    "test_robustness",  # waits
    "test_validity_a2a5",
    "test_term_workflow",
    "test_follow_through",
    "test_a4_transformer",
    "test_engine",
)


def _module(item: pytest.Item) -> str:
    return item.module.__name__.rsplit(".", 1)[-1] if item.module is not None else ""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _module(item) in SLOW_MODULES or _slow_test(item):
            item.add_marker(pytest.mark.slow)
    first = {name: rank for rank, name in enumerate(DEALT_FIRST)}
    items.sort(key=lambda item: first.get(_module(item), len(first)))  # stable: files stay whole


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection built (the test modules, numpy, torch, sympy, every test item) lives as
    long as the session: it leaves the cyclic collector's reach, whose full collections then
    walk only what the tests themselves make (they were a tenth of a worker's CPU)."""
    gc.collect()
    gc.freeze()


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: unknown without it
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: one worker more than the cores, since many tests mostly wait (a sandbox's
    deadline, a nested grader, pip) and a core would otherwise sit idle meanwhile."""
    return len(os.sched_getaffinity(0)) + 1


def nltk_bleu() -> types.ModuleType:
    """nltk's BLEU module, the outside authority for BLEU, imported when a test first needs it:
    nltk loads scipy.stats, over a second that every test process would otherwise pay while
    collecting."""
    return pytest.importorskip("nltk.translate.bleu_score")


def nltk_corpus_bleu(candidates: Any, references: Any, max_n: int = 4, **kw: Any) -> float:
    """nltk's corpus BLEU, uniform weights up to `max_n` (`kw`: e.g. its smoothing_function),
    with nltk's warning for a zero precision silenced."""
    weights = (1.0 / max_n,) * max_n
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nltk warns when a precision is 0
        return float(nltk_bleu().corpus_bleu(references, candidates, weights=weights, **kw))


def code_questions(assignment: Assignment | str) -> list[CodeQuestion]:
    """The code questions of an assignment (an Assignment or its id)."""
    a = registry.load(assignment) if isinstance(assignment, str) else assignment
    return [q for q in a.questions if isinstance(q, CodeQuestion)]


def line_of(source: str, text: str) -> int:
    """The number (from 1) of the line of `source` that is exactly `text`."""
    return source.splitlines().index(text) + 1


def only(assignment: Assignment, *qids: str) -> Assignment:
    """The assignment reduced to the named questions."""
    return dataclasses.replace(assignment, questions=tuple(assignment.question(q) for q in qids))


def slipped(
    aid: str, function: str, new: str, old: str | None = None, *, errors_fail: bool = False
) -> Callable[..., Any]:
    """`function` of the instructor's solution with one slip, as a student would write it: `old`
    (standing there once) replaced by `new`, or without `old`, `new` appended after the solution
    (the later definition wins). With `errors_fail`, any error it raises is a ValueError, which
    the in-process judge counts as a failed case, as the engine counts any error."""
    code_file = registry.load(aid).code_file
    source = (ROOT / "solutions" / aid / code_file).read_text()
    if old is None:
        source += "\n\n" + new
    else:
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    ns: dict[str, Any] = {}
    exec(compile(source, code_file, "exec"), ns)  # noqa: S102 - our own solution, slipped
    fn = ns[function]
    if not errors_fail:
        return fn

    def student(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as e:
            raise ValueError(repr(e)) from e

    return student


def grade_question(
    aid: str,
    root: Path,
    source: str,
    question: str | CodeQuestion,
    student: str,
    limits: sandbox.Limits = FAST,
) -> QuestionResult:
    """The code file `source` (in a folder under `root` named after the student) graded for
    `student` on one question: the assignment's by id, or one given (its cases narrowed, say)."""
    assignment = registry.load(aid)
    folder = root / student.split("@")[0]
    folder.mkdir(parents=True)
    (folder / assignment.code_file).write_text(source)
    alone = (
        only(assignment, question)
        if isinstance(question, str)
        else dataclasses.replace(assignment, questions=(question,))
    )
    (q,) = grade_submission(folder, alone, student=student, limits=limits).questions
    return q


def write_submission(
    code_file: str,
    root: Path,
    source: str | None,
    answers: str | None = None,
    name: str = "sub",
) -> Path:
    """A submission folder `root/name` holding the code file and answers.toml (each if given)."""
    folder = root / name
    folder.mkdir()
    if source is not None:
        (folder / code_file).write_text(source)
    if answers is not None:
        (folder / "answers.toml").write_text(answers)
    return folder


def student_pytest(folder: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """`python -m pytest -q` run in `folder` as a student runs a handout's public tests there:
    no cache folder left behind, and without the pytest plugins this machine has installed for
    the project's own suite (hypothesis, pytest-benchmark, xdist; a student's machine need not
    have them, and their imports cost each run about 0.3 s)."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=folder,
        env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def load_module(name: str, path: Path) -> types.ModuleType:
    """The Python file at `path` imported as module `name` (an answer key, a handout's variant.py)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def answer_key(aid: str) -> types.ModuleType:
    """The instructor's solutions/<aid>/answer_key.py, imported (its `answers(student)` and
    `to_toml(student)` give the right written answers for a student's variant)."""
    return load_module(f"_{aid}_answer_key", ROOT / "solutions" / aid / "answer_key.py")


@pytest.fixture
def submit(tmp_path: Path) -> Callable[..., Path]:
    """submit({"rnn.py": source, "answers.toml": text}, name="sub") -> a submission folder."""
    counter = iter(range(10_000))

    def make(files: Mapping[str, str | bytes], name: str | None = None) -> Path:
        folder = tmp_path / (name or f"sub{next(counter)}")
        folder.mkdir()
        for rel, data in files.items():
            target = folder / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(data, bytes):
                target.write_bytes(data)
            else:
                target.write_text(data)
        return folder

    return make


@pytest.fixture
def grade_files(submit) -> Callable[..., GradeReport]:
    """grade_files("a2", {"rnn.py": src}, student=None, questions=None, limits=FAST) -> GradeReport."""

    def grade(
        assignment_id: str,
        files: Mapping[str, str | bytes],
        *,
        student: str | None = None,
        questions: tuple[str, ...] | None = None,
        limits: sandbox.Limits = FAST,
    ) -> GradeReport:
        a = registry.load(assignment_id)
        if questions:
            a = only(a, *questions)
        return grade_submission(submit(files), a, student=student, limits=limits)

    return grade


# ------------------------------------------------------------------ the in-sandbox echo worker
# One script for every spawn-level test (test_sandbox_spawn, _fallbacks, _containment, test_warm):
# it runs each line's {"code": ...} in one namespace and replies {"ok", "result": repr(result)}
# or {"ok": False, "error"}. It holds only the wire (fds 0-2) and its two protocol descriptors:
# test_warm counts a worker's descriptors, so nothing else stays open (the /dev/null it reads is
# dup'ed onto fd 0 and closed). `warm_numpy` says whether numpy was there before it ran (a warm
# template's import, not its own); the submission's folder (the cwd) is importable, as -I leaves
# the script's folder out.
ECHO_WORKER = textwrap.dedent("""
    import json, os, sys
    warm_numpy = "numpy" in sys.modules
    proto_in = os.fdopen(os.dup(0), "rb", buffering=0)
    proto_out = os.fdopen(os.dup(1), "wb", buffering=0)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    sys.stdin = os.fdopen(0, "r", closefd=False)
    sys.stdout = os.fdopen(1, "w", buffering=1, closefd=False)
    sys.path.insert(0, os.getcwd())
    buf, ns = b"", {"warm_numpy": warm_numpy}
    while True:
        chunk = proto_in.read(1 << 16)
        if not chunk:
            break
        buf += chunk
        while b"\\n" in buf:
            line, buf = buf.split(b"\\n", 1)
            try:
                ns["result"] = None
                exec(json.loads(line)["code"], ns)
                reply = {"ok": True, "result": repr(ns.get("result"))}
            except BaseException as exc:
                reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
            proto_out.write(json.dumps(reply).encode() + b"\\n")
""")


@pytest.fixture
def worker_program(tmp_path: Path) -> Path:
    """The echo worker written to a file (its name, echo_worker.py, shows in the worker's argv)."""
    path = tmp_path / "echo_worker.py"
    path.write_text(ECHO_WORKER)
    return path


class Worker:
    """A spawned echo worker with `ask(code)`; killed at the end of the test."""

    def __init__(self, program: Path, **kw) -> None:
        files = kw.pop("files", {"student.py": b"x = 1\n"})
        hide = [*content.grader_trees(), *kw.pop("hide", [])]  # as the engine passes them
        self.proc = sandbox.spawn(program, files, hide=hide, **kw)

    def send(self, code: str) -> None:
        self.proc.stdin.write(json.dumps({"code": textwrap.dedent(code)}).encode() + b"\n")
        self.proc.stdin.flush()

    def ask(self, code: str, timeout: float = 20.0) -> dict:
        self.send(code)
        return json.loads(self.proc.readline(timeout))

    def value(self, code: str, timeout: float = 20.0):
        reply = self.ask(code, timeout)
        assert reply["ok"], reply
        return eval(reply["result"])  # our own worker's repr of plain data


@pytest.fixture
def spawn(worker_program):
    """spawn(**sandbox.spawn's keywords) -> a Worker; every one is killed at the end."""
    started: list[Worker] = []

    def start(**kw) -> Worker:
        started.append(Worker(worker_program, **kw))
        return started[-1]

    yield start
    for w in started:
        w.proc.kill()


def processes_with(token: str) -> list[int]:
    """Host pids whose command line holds `token`."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                if token.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                    found.append(int(entry))
    return found


def ways_to_runtime(folder: Path) -> set[str]:
    """The names in `folder` that lead to what the worker's Python needs (a venv inside the
    checkout: its `.venv`)."""
    return {
        p.relative_to(folder).parts[0]
        for p in runtime_paths()
        if p.is_relative_to(folder) and p != folder
    }


def python_paths() -> list[Path]:
    """What running this interpreter reads, as typed and as resolved: a venv's `python` is a
    link to its base interpreter, which may sit elsewhere (under /root, or another 0700 folder)."""
    import numpy

    found = [Path(sys.executable), Path(sys.prefix), Path(sys.base_prefix), Path(numpy.__file__)]
    return [q for p in found for q in {Path(os.path.abspath(p)), Path(os.path.realpath(p))}]


def wait_until(predicate, timeout: float = 5.0) -> bool:
    """Poll `predicate` every 50 ms until it holds or `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()
