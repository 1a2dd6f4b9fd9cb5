"""A `.py` whose top level raises while it is imported: the statement is skipped and the file
runs on from the next one, as a notebook runs its next cell, so the functions are graded and
the feedback names each skipped line with what it raised (grader/sandbox/worker.py, `_run_on`).

The files are the instructor's a1 solution with lines a student leaves at the top level: a
data file loaded that only their machine has, a `sys.exit()`, a quick try of a function.
Expected scores are the questions' points (the solution's functions are untouched) or, for a
function that needs a name the skipped line would have set, nothing.
"""

from __future__ import annotations

import dataclasses

import pytest
from conftest import FAST, ROOT, line_of

from grader.reports.results_json import to_gradescope
from grader.sandbox.session import MAX_SKIPPED

A1 = (ROOT / "solutions" / "a1_word_vectors" / "word_vectors.py").read_text()
BEFORE_ANALOGY = "def analogy(E, vocab, a, b, c):\n"
QUESTIONS = ("a1.softmax", "a1.analogy", "a1.svd_embeddings")  # before, after, last in the file


def _with(lines: str, at: str = BEFORE_ANALOGY) -> str:
    """The solution with `lines` at the top level just before `at` (between its functions)."""
    assert A1.count(at) == 1
    return A1.replace(at, lines + "\n\n" + at)


# an import time of 2 s: the statement-by-statement re-import's rules at their smallest
SHORT_IMPORT = dataclasses.replace(FAST, call_seconds=2.0)


def _grade(grade_files, source: str, *questions: str, limits=FAST):
    return grade_files(
        "a1", {"word_vectors.py": source}, questions=questions or QUESTIONS, limits=limits
    )


STRAY = 'vectors = np.load("glove_50d.npy")\nprint(analogy(vectors, {"a": 0}, "a", "a", "a"))'


def test_a_data_file_only_the_student_has_costs_no_function(grade_files):
    source = _with(STRAY)
    report = _grade(grade_files, source)
    assert [q.score for q in report.questions] == [q.max_score for q in report.questions]
    (note,) = [w for w in report.warnings if "was imported" in w]
    load, call = line_of(source, STRAY.splitlines()[0]), line_of(source, STRAY.splitlines()[1])
    assert f'line {load} (`vectors = np.load("glove_50d.npy")`) raised `FileNotFoundError' in note
    assert f"line {call} (`print(analogy(" in note and "`NameError: name 'analogy'" in note
    assert "those statements were skipped" in note and '`if __name__ == "__main__":`' in note
    # the student reads it at the top of their results, and no question carries an error
    data = to_gradescope(report)
    assert "glove_50d.npy" in data["output"]
    assert all("error" not in t["extra_data"] for t in data["tests"])


@pytest.mark.parametrize("exit_call", ["sys.exit(0)", "exit()", "raise SystemExit(main())"])
def test_a_sys_exit_left_at_the_top_level_ends_nothing(grade_files, exit_call):
    source = _with(f"import sys\n\ndef main():\n    return 0\n\n{exit_call}")
    report = _grade(grade_files, source)
    assert [q.score for q in report.questions] == [q.max_score for q in report.questions]
    (note,) = [w for w in report.warnings if "was imported" in w]
    assert (
        f"line {line_of(source, exit_call)} (`{exit_call}`) ends the program (`SystemExit`)" in note
    )
    assert "that statement was skipped" in note


def test_the_skipped_statements_named_are_at_most_the_sessions_cap(grade_files):
    """Twelve stray lines that raise: all are skipped and the functions graded, and the note
    names the first `MAX_SKIPPED` (the session tells the worker its cap, and reads no more)."""
    stray = "\n".join(f"int('not a number {i}')" for i in range(MAX_SKIPPED + 2))
    report = _grade(grade_files, _with(stray))
    assert [q.score for q in report.questions] == [q.max_score for q in report.questions]
    (note,) = [w for w in report.warnings if "was imported" in w]
    assert note.count(" raised `ValueError") == MAX_SKIPPED, note
    assert f"not a number {MAX_SKIPPED - 1}" in note and f"number {MAX_SKIPPED}'" not in note


def test_a_function_that_needs_what_the_skipped_line_set_fails_alone(grade_files):
    """`analogy` reads a module constant that the raising line would have set: it alone fails,
    with the NameError a student can trace to the note."""
    uses_scale = A1.replace(BEFORE_ANALOGY, BEFORE_ANALOGY + "    assert SCALE == 1\n")
    source = uses_scale.replace(
        BEFORE_ANALOGY, "SCALE = int(open('scale.txt').read())\n\n\n" + BEFORE_ANALOGY
    )
    soft, ana, svd = _grade(grade_files, source).questions
    assert soft.score == soft.max_score and svd.score == svd.max_score
    assert ana.score == 0 and "NameError" in ana.feedback, ana.feedback


def test_future_annotations_hold_for_the_statements_run_after_a_skip(grade_files):
    """A function after the skipped line whose annotation names something undefined imports
    only under `from __future__ import annotations`, as the whole file would."""
    source = "from __future__ import annotations\n" + _with(
        "raise RuntimeError('left from debugging')",
        at="def svd_embeddings(X, k):\n",
    ).replace("def svd_embeddings(X, k):\n", "def svd_embeddings(X: Undefined, k):\n")
    report = _grade(grade_files, source)
    assert [q.score for q in report.questions] == [q.max_score for q in report.questions]
    assert any("`RuntimeError: left from debugging`" in w for w in report.warnings)


def test_what_a_re_import_after_a_hidden_call_raises_is_never_shown(
    grade_files, tmp_path, monkeypatch
):
    """The process ends in a hidden case after writing its inputs to a file; when the worker
    starts again, the top level raises with them and is skipped. Only the first import, before
    any call, is reported: nothing of the hidden case reaches the student. Unisolated
    (`SEQGRADE_SANDBOX=off`), so that the file outlives the process as it could where the
    sandbox has to fall back."""
    monkeypatch.setenv("SEQGRADE_SANDBOX", "off")
    seen = tmp_path / "seen.txt"
    trap = (
        "import os\n"
        f"if os.path.exists({str(seen)!r}):\n"
        "    print('RE-IMPORTED')\n"
        f"    raise ValueError('LEAKMARK' + open({str(seen)!r}).read())"
    )
    leak = (
        "def softmax(x, axis=-1):\n"
        "    if np.asarray(x).size > 3:\n"
        f"        open({str(seen)!r}, 'w').write(repr(x))\n"
        "        os._exit(3)\n"
    )
    source = _with(trap).replace("def softmax(x, axis=-1):\n", leak)
    report = _grade(grade_files, source, "a1.softmax", "a1.analogy")
    assert "RE-IMPORTED" in report.student_output  # the trap did fire on a re-import
    data = to_gradescope(report)
    shown = [data["output"]] + [
        t["output"] for t in data["tests"] if t.get("visibility", "visible") == "visible"
    ]
    assert not any("LEAKMARK" in text for text in shown), shown
    assert report.questions[1].score == report.questions[1].max_score


def test_a_notebook_cell_that_raises_is_still_told_as_its_cell(grade_files):
    """The run-on is for a `.py`: a notebook's cells keep their own words (docs/notebooks.md)."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(A1),
        nbformat.v4.new_code_cell('vectors = np.load("glove_50d.npy")'),
    ]
    files = {"word_vectors.ipynb": nbformat.writes(nb)}
    report = grade_files("a1", files, questions=("a1.softmax",))
    assert report.questions[0].score == report.questions[0].max_score
    assert any("code cell 2" in w for w in report.warnings), report.warnings
    assert not any("was imported" in w for w in report.warnings), report.warnings


TRAINING = (
    "losses = []\n"
    "for epoch in range(10**9):  # left running from the student's own tries\n"
    "    losses = (losses + [epoch * 0.5])[-5:]"
)


def test_a_training_loop_left_at_the_top_level_is_stopped_and_the_functions_graded(grade_files):
    """The whole import runs out of time once; it is run again one statement at a time, the
    loop stopped at a notebook cell's CPU time (a quarter of the import time, at least 1 s),
    and every function graded, also by the workers started again after a crash (each
    re-import is run the same way, else it would run out of time again)."""
    ends = (
        "def softmax(x, axis=-1):\n"
        "    if np.asarray(x).size > 3:\n"
        "        import os\n"
        "        os._exit(3)\n"
    )
    source = _with(TRAINING).replace("def softmax(x, axis=-1):\n", ends)
    report = _grade(grade_files, source, limits=SHORT_IMPORT)
    soft, ana, svd = report.questions
    assert soft.score < soft.max_score  # its hidden cases end the process: restarts follow
    assert ana.score == ana.max_score and svd.score == svd.max_score, (ana.feedback, svd.feedback)
    (note,) = [w for w in report.warnings if "importing" in w]
    assert "`word_vectors.py` did not finish importing within 2 s" in note, note
    line = line_of(source, TRAINING.splitlines()[1])
    assert f"line {line} (`for epoch in range(10**9):" in note, note
    assert "was stopped after 1 s of CPU time" in note, note


WAITING = 'import time\ntime.sleep(3600)  # until the data has downloaded\nprint("ready")'


def test_a_statement_that_waits_is_stopped_at_the_import_time_and_the_functions_graded(
    grade_files,
):
    """A wait computes nothing, so no CPU limit stops it: in the re-import one statement at a
    time it is stopped when the import's time runs out, as a notebook's cell is at its hard
    stop; a later statement that runs code is then not run at all, and the definitions after
    it still are (a quarter of a second each past the stop)."""
    source = _with(WAITING)
    report = _grade(grade_files, source, limits=SHORT_IMPORT)
    assert [q.score for q in report.questions] == [q.max_score for q in report.questions], [
        q.feedback for q in report.questions
    ]
    (note,) = [w for w in report.warnings if "importing" in w]
    assert "`word_vectors.py` did not finish importing within 2 s" in note, note
    wait, ready = line_of(source, WAITING.splitlines()[1]), line_of(source, 'print("ready")')
    assert (
        f"line {wait} (`time.sleep(3600)  # until the data has downloaded`) was stopped when "
        "the time for importing the file ran out" in note
    ), note
    assert f'line {ready} (`print("ready")`) was not run: the time for importing' in note, note


def test_a_missing_library_after_a_skipped_line_still_gets_its_stand_in(grade_files):
    """Past a skipped line, `import seaborn` (not installed here) is run again with a stand-in,
    as a whole import is (docs/conventions.md): a note names the library, not a skipped line."""
    source = _with("vectors = np.load('glove.npy')\nimport seaborn_is_not_installed as sns")
    report = _grade(grade_files, source)
    assert [q.score for q in report.questions] == [q.max_score for q in report.questions]
    (note,) = [w for w in report.warnings if "was imported" in w]
    assert "`FileNotFoundError" in note and "seaborn" not in note, note
    assert any("`seaborn_is_not_installed` is not installed" in w for w in report.warnings)
