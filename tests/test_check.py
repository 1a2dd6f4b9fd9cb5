"""`seqgrade check ID`: the course's assignments pass; each kind of authoring mistake is reported.

Broken assignments are built from a4 by the mistakes an author makes: a misconception id that
is not in the catalog, a mutant that computes what another one does (or what the reference
does), a written wrong form equal to the answer, a solution that is not right, a stub that
holds its solution, an answers.toml template that gives an answer, the answer key shipped in
the handout, public tests that fail on the solution.
"""

from __future__ import annotations

import dataclasses
import io
import shutil
from pathlib import Path

import pytest

from grader.app import check
from grader.app.cli import main
from grader.course import registry
from grader.course.content import assignment_dir, solution_dir
from grader.questions import CodeQuestion, WrittenQuestion, WrongForm

A = registry.load("a4")


def _replace_question(assignment, qid, **changes):
    qs = tuple(
        dataclasses.replace(q, **changes) if q.id == qid else q for q in assignment.questions
    )
    return dataclasses.replace(assignment, questions=qs)


def test_the_course_assignment_passes_every_check():
    out = io.StringIO()
    assert check.run("a4", out) == 0
    text = out.getvalue()
    for name in ("catalog", "mutants", "grades", "handout", "public tests"):
        assert f"ok     {name}:" in text
    assert "6 of 6 checks passed" in text


def test_unknown_id_and_twin_mutants_are_reported():
    q = A.question("a4.sdpa")
    assert isinstance(q, CodeQuestion)
    twin = q.mutants["attention-scale-by-dk"]
    broken = _replace_question(
        A, "a4.sdpa", mutants={**q.mutants, "scale-by-dk-again": twin, "mask-ignored": q.reference}
    )
    cat = check.check_catalog(broken)
    assert cat.problems == [
        "scale-by-dk-again (named by a4.sdpa) is not in the catalog: register it in grader/catalog/"
    ]
    muts = check.check_mutants(broken, keys=(None,))
    assert any(
        "a4.sdpa: attention-scale-by-dk and scale-by-dk-again give the same output" in p
        for p in muts.problems
    )
    assert any(
        "a4.sdpa: mask-ignored and the reference give the same output" in p for p in muts.problems
    )
    assert all(p.startswith("a4.sdpa:") for p in muts.problems)


def test_a_wrong_form_equal_to_the_answer_is_reported():
    q = A.question("a4.w_cost_doubling")
    assert isinstance(q, WrittenQuestion)
    broken = _replace_question(
        A, q.id, wrong_forms=lambda v: [WrongForm(4.0, "attention-cost-linear", "no")]
    )
    (problem,) = check.check_mutants(broken, keys=(None,)).problems
    assert problem.startswith(
        "a4.w_cost_doubling: the wrong form for attention-cost-linear equals the expected"
    )


@pytest.fixture()
def broken_files(tmp_path: Path) -> tuple[Path, Path]:
    solution, handout = tmp_path / "solution", tmp_path / "handout"
    shutil.copytree(solution_dir(A.id), solution)
    shutil.copytree(assignment_dir(A.id), handout)
    shutil.copy(
        handout / "variant.py", solution / "variant.py"
    )  # the answer key finds it beside itself
    code = (solution / "transformer.py").read_text()
    wrong = code.replace(
        "e / np.sum(e, axis=-1, keepdims=True)", "e / np.sum(e, axis=-2, keepdims=True)"
    )
    assert wrong != code
    (solution / "transformer.py").write_text(wrong)  # softmax down the columns
    stub = (handout / "transformer.py").read_text()
    start = stub.index("def causal_mask(T):")
    end = stub.index("def padding_mask(")
    solved = code[code.index("def causal_mask(T):") : code.index("def padding_mask(")]
    (handout / "transformer.py").write_text(stub[:start] + solved + stub[end:])
    template = (handout / "answers.toml").read_text()
    (handout / "answers.toml").write_text(
        template.replace('cost_doubling = ""', "cost_doubling = 4")
    )
    shutil.copy(solution_dir(A.id) / "answer_key.py", handout / "answer_key.py")
    return solution, handout


def test_broken_solution_stub_and_handout_are_reported(broken_files):
    solution, handout = broken_files
    findings = {f.name: f for f in check.check_assignment(A, solution=solution, handout=handout)}
    assert findings["catalog"].ok and findings["mutants"].ok
    grades = findings["grades"].problems
    assert any(p.startswith("solution, variant default: a4.sdpa scored") for p in grades)
    assert any(p.startswith("solution, variant check-a@example.edu: a4.mha scored") for p in grades)
    points = A.question("a4.causal_mask").points
    assert any(p.startswith(f"stub: a4.causal_mask scored {points:g}/{points:g}") for p in grades)
    shown = findings["handout"].problems
    assert "answer_key.py is a hidden file (answer key, suite or instructor tests)" in shown
    assert "transformer.py: the stub of causal_mask() is the solution's body" in shown
    assert "answers.toml gives the answer to a4.w_cost_doubling (cost_doubling)" in shown
    assert findings["public tests"].problems[0].startswith("fail on the solution:")
    out = io.StringIO()
    check.report(A, list(findings.values()), out)
    assert "FAILED grades:" in out.getvalue() and "3 of 6 checks passed" in out.getvalue()


def test_a_code_question_without_a_visible_case_fails_the_check():
    import toy_assignment as toy

    finding = check.check_visible_cases(toy.ASSIGNMENT, keys=(None,))
    (problem,) = finding.problems  # toy.linear's cases are all hidden
    assert problem.startswith("toy.linear has no visible case")
    assert check.check_visible_cases(A).ok


def test_a_stub_line_of_the_suites_case_generation_is_a_leak(tmp_path: Path):
    handout = tmp_path / "handout"
    shutil.copytree(assignment_dir(A.id), handout)
    line = sorted(check._suite_lines(A))[0]
    with open(handout / "README.md", "a") as fh:
        fh.write(f"\n    {line}\n")
    (problem,) = check.check_handout(A, handout, solution_dir(A.id)).problems
    assert problem.startswith("README.md holds 1 line(s) of the hidden suite")


def test_cli_check_exit_status(capsys):
    assert main(["check", "a4"]) == 0
    assert "6 of 6 checks passed" in capsys.readouterr().out
    assert main(["check", "a9"]) == 2


# ---------------------------------------------------------------- CLI conventions (issue 21 item 6)


def test_every_argument_of_every_command_has_help_text():
    import argparse

    from grader.app.cli import _parser

    parser = _parser()
    (subparsers,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    missing = [
        f"{name} {a.dest}"
        for name, sub in subparsers.choices.items()
        for a in sub._actions
        if not isinstance(a, argparse._HelpAction) and not a.help
    ]
    assert missing == []


def test_out_dash_streams_a_bundle_to_stdout(tmp_path: Path):
    import subprocess
    import sys
    import zipfile

    run = subprocess.run(
        [sys.executable, "-m", "grader", "handout", "a1", "--out", "-"],
        cwd=tmp_path,
        capture_output=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    (tmp_path / "h.zip").write_bytes(run.stdout)
    assert "answers.toml" in {Path(n).name for n in zipfile.ZipFile(tmp_path / "h.zip").namelist()}
    assert not (tmp_path / "-").exists()


def test_a_catalog_typo_that_stops_the_suite_loading_is_a_failed_check(monkeypatch):
    def typo(name):
        raise registry.AuthoringError(
            "a4_transformer names misconceptions that are not in the catalog: "
            "a4.sdpa: atention-missing-scale"
        )

    monkeypatch.setattr(registry, "load", typo)
    out = io.StringIO()
    assert check.run("a4", out) == 1
    assert "FAILED catalog: a4_transformer names misconceptions" in out.getvalue()


def test_results_dash_prints_the_results_json_instead_of_the_table(capsys, tmp_path: Path):
    import json

    folder = tmp_path / "sub"
    shutil.copytree(assignment_dir("a1_word_vectors"), folder)  # the stub: graded, zero
    assert main(["grade", str(folder), "-a", "a1", "--results", "-"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["score"] == 0 and data["tests"] and not (Path.cwd() / "-").exists()
