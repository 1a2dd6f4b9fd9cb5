"""The term file's `[limits]` (docs/term.md): the sandbox's limits as the staff set them, checked
when read, applied by `seqgrade grade --term`, by a batch (whose stored results graded under other
limits are stale) and by the Gradescope container that carries the term (tests/test_hostile_gradescope.py
grades its hostile files under the same limits as tests/test_hostile.py)."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

import pytest
import toy_assignment as toy

from grader import sandbox
from grader.app import cli
from grader.app.batch import grade_all
from grader.course import fingerprint, registry, term
from grader.course.content import solution_dir


def _term(tmp_path: Path, limits: str) -> Path:
    path = tmp_path / "term.toml"
    path.write_text(f"[limits]\n{limits}\n")
    return path


def test_the_limits_are_the_sandboxs_own_fields():
    """Every setting names a field of sandbox.Limits: the two cannot drift apart."""
    fields = {f.name for f in dataclasses.fields(sandbox.Limits)}
    assert {field for field, *_ in term.LIMIT_SETTINGS.values()} <= fields


def test_a_term_sets_the_limits_and_keeps_the_defaults_of_the_rest(tmp_path):
    known = term.load(_term(tmp_path, "call_seconds = 2\nmemory_mib = 1024"))
    assert sandbox.Limits(**known.limits) == sandbox.Limits(call_seconds=2.0, memory_bytes=1 << 30)
    assert term.load(_term(tmp_path, "")).limits == {}


@pytest.mark.parametrize(
    ("limits", "words"),
    [
        (
            "call = 2",
            "unknown setting 'call' (known: call_seconds, submission_seconds, memory_mib)",
        ),
        ("call_seconds = 0", "call_seconds: a number from 0.1 to 600, not 0"),
        ("call_seconds = true", "call_seconds: a number from 0.1 to 600, not True"),
        ('call_seconds = "10s"', "call_seconds: a number from 0.1 to 600, not '10s'"),
        ("memory_mib = 64", "memory_mib: a number from 256 to 65536, not 64"),
        ("memory_mib = 1000.5", "memory_mib: a whole number of MiB"),
        (
            "call_seconds = 30\nsubmission_seconds = 10",
            "submission_seconds (10) is shorter than call_seconds (30)",
        ),
    ],
)
def test_a_bad_limit_is_refused_with_the_setting_and_what_to_write(tmp_path, limits, words):
    with pytest.raises(term.TermError) as err:
        term.load(_term(tmp_path, limits))
    assert "term.toml [limits]" in str(err.value)
    assert words in str(err.value)


def test_limits_outside_a_table_are_refused(tmp_path):
    path = tmp_path / "term.toml"
    path.write_text("limits = 3\n")
    with pytest.raises(term.TermError, match=r"\[limits\]: a table of call_seconds"):
        term.load(path)


def test_a_stored_result_graded_under_other_limits_is_stale():
    a1 = registry.load("a1_word_vectors")
    plain = fingerprint.assignment_fingerprints(a1)
    assert fingerprint.assignment_fingerprints(a1, {}) == plain  # no [limits]: results stay valid
    tight = fingerprint.assignment_fingerprints(a1, {"call_seconds": 2.0})
    assert plain.changed(tight) == ["grader"]
    assert fingerprint.assignment_fingerprints(a1, {"call_seconds": 2.0}) == tight


SLEEPS = "\n\ndef analogy(E, vocab, a, b, c):\n    import time\n    time.sleep(60)\n"


def test_grade_with_a_term_stops_a_call_at_the_terms_limit(tmp_path, capsys):
    sub = tmp_path / "sub"
    sub.mkdir()
    solution = (solution_dir("a1_word_vectors") / "word_vectors.py").read_text()
    (sub / "word_vectors.py").write_text(solution + SLEEPS)
    results = tmp_path / "results.json"
    staff = _term(tmp_path, "call_seconds = 1.5")
    start = time.monotonic()
    code = cli.main(
        ["grade", str(sub), "-a", "a1", "--term", str(staff), "--results", str(results)]
    )
    took = time.monotonic() - start
    capsys.readouterr()
    assert code == 0
    tests = {t["extra_data"].get("question"): t for t in json.loads(results.read_text())["tests"]}
    assert tests["a1.analogy"]["score"] == 0
    assert "stopped after 1.5 s" in tests["a1.analogy"]["output"]
    assert tests["a1.glove_loss"]["score"] == tests["a1.glove_loss"]["max_score"]
    assert took < 30  # not the default 10 s per call


def test_a_term_with_bad_limits_stops_grade_before_grading(tmp_path, capsys):
    staff = _term(tmp_path, "call_seconds = -1")
    code = cli.main(
        ["grade", str(solution_dir("a1_word_vectors")), "-a", "a1", "--term", str(staff)]
    )
    assert code == 2
    assert "call_seconds: a number from 0.1 to 600" in capsys.readouterr().err


def test_a_batch_grades_within_the_terms_limits(tmp_path):
    root = tmp_path / "class"
    for name, source in (
        (
            "slow",
            toy.NUMPY_SOLUTION + "\n\ndef linear(x, W, b):\n    import time\n    time.sleep(60)\n",
        ),
        ("honest", toy.NUMPY_SOLUTION),
    ):
        (root / name).mkdir(parents=True)
        (root / name / "toy.py").write_text(source)
    graded = grade_all(
        root,
        toy.ASSIGNMENT,
        jobs=1,
        results_dir=tmp_path / "res",
        progress=False,
        limits={"call_seconds": 1.0},
    )
    rows = {sub.name: data for sub, data in graded}
    slow = {t["extra_data"].get("question"): t for t in rows["slow"]["tests"]}
    assert slow["toy.linear"]["score"] == 0
    assert "did not return within 1 s" in slow["toy.linear"]["output"]
    assert rows["honest"]["score"] == sum(q.points for q in toy.ASSIGNMENT.questions)


def test_the_notebook_handout_states_the_terms_time_limits(tmp_path, capsys):
    """The cell budget the notebook states is derived from the per-call limit, as grading derives
    it: 2.5 s of CPU per cell and 9 s in all by default; a quarter and 90% of 20 s with the term."""
    import nbformat

    staff = _term(tmp_path, "call_seconds = 20")
    texts = {}
    for name, extra in (("plain", []), ("term", ["--term", str(staff)])):
        out = tmp_path / f"{name}.ipynb"
        assert cli.main(["handout", "a1", "--notebook", "--out", str(out), *extra]) == 0
        cells = nbformat.read(str(out), as_version=4).cells
        texts[name] = next(c.source for c in cells if "How this notebook is graded" in c.source)
    assert "**2.5 s** of CPU time" in texts["plain"] and "**9 s**" in texts["plain"]
    assert "**5 s** of CPU time" in texts["term"] and "**18 s**" in texts["term"]
    assert cli.main(["handout", "a1", "--out", str(tmp_path / "h.zip"), "--term", str(staff)]) == 2
    assert "handout --term is for --notebook" in capsys.readouterr().err


def test_a_bundled_term_that_cannot_be_used_is_said_once_and_grades_as_without_one(
    tmp_path, capsys
):
    """In the container: the default limits, the raw grade, and the reason for instructors."""
    from grader.app import gradescope

    folder = tmp_path / "source" / term.BUNDLE_DIR
    folder.mkdir(parents=True)
    (folder / term.TERM_FILE).write_text("[limits]\ncall_seconds = 0\n")
    assert gradescope.bundled_term(tmp_path / "source") is None
    said = capsys.readouterr().out
    assert said.count("the bundled term cannot be used") == 1
    assert "call_seconds: a number from 0.1 to 600, not 0" in said
    raw = {"score": 1.0, "tests": []}
    assert gradescope.staff_adjusted(raw, registry.load("a1"), {}, None, None) == raw
    assert gradescope.bundled_term(tmp_path / "elsewhere") is None  # no bundled term: no words
    assert capsys.readouterr().out == ""
