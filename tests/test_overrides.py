"""Overrides files: read from TOML or CSV, checked against the questions and the class, and
applied to a copy of a result (the question's score, the comment under it, the total)."""

from __future__ import annotations

import pytest
import toy_assignment as toy

from grader.course import adjust, overrides
from grader.course.overrides import OverrideError


def _file(tmp_path, text: str, name: str = "overrides.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def _result() -> dict:
    """A results.json as the grader writes it, scores chosen by hand: 4 + 0 + 2 + 1 = 7 of 10."""

    def test(qid: str, score: float, top: float) -> dict:
        return {
            "name": qid,
            "score": score,
            "max_score": top,
            "status": "passed" if score == top else "failed",
            "output": f"feedback of {qid}",
            "visibility": "visible",
            "extra_data": {"question": qid, "kind": "code", "misconceptions": []},
        }

    return {
        "score": 7.0,
        "output": "**Score: 7 / 10**\n\nsummary",
        "tests": [
            test("toy.softmax", 4, 4),
            test("toy.linear", 0, 3),
            test("toy.quad", 2, 2),
            test("toy.norm", 1, 1),
        ],
        "extra_data": {"assignment": "toy", "student": "ada@uni.edu"},
    }


def test_toml_entries_by_id_short_id_and_number(tmp_path):
    path = _file(
        tmp_path,
        """
[[override]]
student = "Ada@Uni.edu"
question = "toy.linear"
score = 2.5
comment = "Regrade request upheld."
who = "TA Bob"
when = 2026-09-25

[[override]]
student = "bob@uni.edu"
question = "quad"
delta = -1

[[override]]
student = "submission_3"
question = 4
score = 0
""",
    )
    found = overrides.load(path, toy.ASSIGNMENT)
    assert [(o.student, o.question, o.score, o.delta) for o in found] == [
        ("ada@uni.edu", "toy.linear", 2.5, None),
        ("bob@uni.edu", "toy.quad", None, -1.0),
        ("submission_3", "toy.norm", 0.0, None),
    ]
    assert found[0].who == "TA Bob" and found[0].when == "2026-09-25"


def test_csv_entries(tmp_path):
    path = _file(
        tmp_path,
        "student,question,score,delta,comment,who,when\n"
        "ada@uni.edu,toy.linear,3,,judged by hand,TA Bob,2026-09-25\n"
        "bob@uni.edu,softmax,,+1,,,\n",
        "overrides.csv",
    )
    found = overrides.load(path, toy.ASSIGNMENT)
    assert [(o.question, o.score, o.delta, o.comment) for o in found] == [
        ("toy.linear", 3.0, None, "judged by hand"),
        ("toy.softmax", None, 1.0, ""),
    ]


@pytest.mark.parametrize(
    ("separator", "decimal"),
    [(",", "2.5"), (";", "2,5"), ("\t", "2.5")],
    ids=["comma", "semicolon", "tab"],
)
def test_csv_as_a_spreadsheet_saves_it(tmp_path, separator, decimal):
    """Excel's "CSV UTF-8" starts with a byte-order mark and ends lines with CRLF; in a locale
    whose decimal mark is the comma it separates fields with semicolons and writes 2,5."""
    rows = [
        ["student", "question", "score", "delta", "comment"],
        ["Ada@Uni.edu", "toy.linear", decimal, "", "judged by hand; upheld"],
        ["bob@uni.edu", "2", "", "-1", ""],
    ]
    text = "\r\n".join(
        separator.join(f'"{v}"' if separator in v or ";" in v else v for v in row) for row in rows
    )
    path = tmp_path / "overrides.csv"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())
    found = overrides.load(path, toy.ASSIGNMENT)
    assert [(o.student, o.question, o.score, o.delta, o.comment) for o in found] == [
        ("ada@uni.edu", "toy.linear", 2.5, None, "judged by hand; upheld"),
        ("bob@uni.edu", toy.ASSIGNMENT.questions[1].id, None, -1.0, ""),
    ]


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (
            '[[override]]\nstudent = "a@b"\nquestion = "attention"\nscore = 1\n',
            r"override 1: question 'attention' is not a question of toy; give an id \(toy.softmax or softmax\) or a number 1–4",
        ),
        ('[[override]]\nstudent = "a@b"\nquestion = "linear"\n', "give exactly one of `score`"),
        (
            '[[override]]\nstudent = "a@b"\nquestion = "linear"\nscore = 1\ndelta = 1\n',
            "exactly one",
        ),
        (
            '[[override]]\nstudent = "a@b"\nquestion = "linear"\nscore = 4\n',
            r"score 4 is outside 0–3, the points of toy.linear",
        ),
        ('[[override]]\nquestion = "linear"\nscore = 1\n', "`student` is missing"),
        (
            '[[override]]\nstudent = "a@b"\nquestion = "linear"\nscore = "lots"\n',
            "score must be a number",
        ),
        (
            '[[override]]\nstudent = "a@b"\nquestion = "linear"\npoints = 1\n',
            "unknown field 'points'",
        ),
        ("[[override]\nstudent =", "not valid TOML"),
        ('student = "a@b"\n', r"expected \[\[override\]\] tables only"),
    ],
)
def test_a_malformed_entry_is_an_error_naming_the_entry(tmp_path, text, says):
    with pytest.raises(OverrideError, match=says):
        overrides.load(_file(tmp_path, text), toy.ASSIGNMENT)


def test_an_unknown_student_is_an_error():
    found = (
        overrides.Override(
            "carol@uni.edu", "toy.linear", 1.0, None, "", "", "", "o.toml, override 2"
        ),
    )
    overrides.check_students(found, [{"carol@uni.edu", "submission_9"}])  # known: fine
    with pytest.raises(
        OverrideError, match="o.toml, override 2: student 'carol@uni.edu' has no submission"
    ):
        overrides.check_students(found, [{"ada@uni.edu"}, {"bob@uni.edu", "1002"}])


def test_a_score_is_set_shown_under_its_question_and_the_total_follows():
    o = overrides.Override(
        "ada@uni.edu", "toy.linear", 2.5, None, "Regrade request upheld.", "TA Bob", "", ""
    )
    raw = _result()
    data = adjust.apply(raw, adjust.Decision((o,)))
    linear = data["tests"][1]
    assert linear["score"] == 2.5 and linear["status"] == "failed"
    assert linear["output"] == (
        "feedback of toy.linear\n\n**Adjusted by the course staff:** 0 → 2.5 points. Regrade request upheld."
    )
    assert "TA Bob" not in linear["output"]  # who decided is for the staff
    assert linear["extra_data"]["overrides"][0]["who"] == "TA Bob"
    assert data["score"] == 9.5  # 7 + 2.5
    assert data["output"].startswith(
        "**Score: 9.5 / 10** (graded 7; after the course staff's adjustment)"
    )
    assert data["extra_data"]["adjustments"]["raw_score"] == 7.0
    assert raw["score"] == 7.0 and raw["tests"][1]["score"] == 0  # the stored result stays raw


def test_a_delta_stays_within_the_questions_points():
    up = overrides.Override("ada@uni.edu", "toy.linear", None, 5.0, "", "", "", "")
    down = overrides.Override("ada@uni.edu", "toy.quad", None, -3.0, "", "", "", "")
    data = adjust.apply(_result(), adjust.Decision((up, down)))
    assert [t["score"] for t in data["tests"]] == [4, 3.0, 0.0, 1]  # 0 + 5 → 3 (max); 2 − 3 → 0
    assert data["tests"][1]["status"] == "passed"
    assert data["score"] == 8.0


def test_only_the_students_own_overrides_apply():
    mine = overrides.Override("ada@uni.edu", "toy.linear", 3.0, None, "", "", "", "")
    theirs = overrides.Override("bob@uni.edu", "toy.linear", 1.0, None, "", "", "", "")
    decision = adjust.decide(None, (mine, theirs), "toy", {"ada@uni.edu", "submission_1"}, None)
    assert decision.overrides == (mine,)
    assert (
        adjust.apply(_result(), adjust.decide(None, (theirs,), "toy", {"ada@uni.edu"}, None))
        == _result()
    )
