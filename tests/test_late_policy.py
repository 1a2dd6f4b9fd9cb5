"""The late policy, worked by hand: lateness after extensions and grace, late days, the
percentage per started day or hour, the cap, the late due date, and what the student reads."""

from __future__ import annotations

from datetime import timedelta

import pytest

from grader.course import late, roster
from grader.course.late import Dates, Policy, assess, parse_date

DUE = parse_date("2026-09-18T23:59:00-04:00", "due")
LATE_DUE = parse_date("2026-09-22T23:59:00-04:00", "late due")
DATES = Dates(DUE, LATE_DUE)
PER_DAY = Policy("percent_per_day", percent=10, cap=50, grace=timedelta(minutes=15))


def at(text: str):
    return parse_date(text, "submitted")


def test_dates_as_gradescope_and_its_export_write_them():
    # submission_metadata.json (Gradescope's docs) and the export's YAML (nine fraction digits)
    assert at("2018-07-01T14:22:32.365935-07:00").isoformat() == "2018-07-01T14:22:32.365935-07:00"
    assert (
        at("2026-09-18 20:00:00.123456789 -04:00").isoformat() == "2026-09-18T20:00:00.123456-04:00"
    )
    assert at("2026-09-19T03:59:00Z") == DUE  # the same instant in UTC
    assert parse_date(None, "x") is None and parse_date("", "x") is None


@pytest.mark.parametrize(
    ("text", "says"),
    [("2026-09-18T23:59:00", "has no time zone"), ("next friday", "is not a date")],
)
def test_a_bad_date_is_refused_with_what_to_write(text, says):
    with pytest.raises(late.LateError, match=says):
        parse_date(text, "term.toml due")


def test_span_reads_as_people_say_it():
    assert late.span(timedelta(hours=27, minutes=1)) == "1 day 3 h"
    assert late.span(timedelta(hours=2, minutes=5)) == "2 h 5 min"
    assert late.span(timedelta(days=2)) == "2 days"
    assert late.span(timedelta(seconds=40)) == "40 s"


DAY, HOUR = timedelta(days=1), timedelta(hours=1)


@pytest.mark.parametrize(
    ("delta", "unit", "says"),
    [
        (timedelta(days=2, minutes=1), DAY, "2 days 1 min"),  # three started days, not two
        (timedelta(days=2, seconds=7), DAY, "2 days 7 s"),
        (timedelta(hours=27, minutes=1), DAY, "1 day 3 h"),  # the 3 h already starts day two
        (timedelta(hours=27, minutes=1), HOUR, "1 day 3 h 1 min"),  # 28 started hours
        (timedelta(hours=2, seconds=30), HOUR, "2 h 30 s"),
        (timedelta(days=2), DAY, "2 days"),
    ],
)
def test_span_never_hides_a_started_day_or_hour_the_policy_charges(delta, unit, says):
    assert late.span(delta, unit) == says


def test_a_minute_past_whole_days_is_said_with_the_day_it_starts():
    # 23:59 on the 18th to 00:00 on the 21st: 2 days 1 min, three started days, 3 × 10 %
    v = assess(PER_DAY, DATES, at("2026-09-21T00:00:00-04:00"))
    assert v.percent == 30
    assert v.message(3.0) == "Submitted 2 days 1 min late: −30% (−3 points)."


def test_on_time_and_within_the_grace_period_cost_nothing():
    assert assess(PER_DAY, DATES, at("2026-09-18T22:00:00-04:00")).percent == 0
    ten_min = assess(PER_DAY, DATES, at("2026-09-19T00:09:00-04:00"))
    assert ten_min.percent == 0 and ten_min.late_by == timedelta(0) and ten_min.message(0) == ""


def test_every_started_day_costs_its_percent():
    # 23:59 on the 18th to 03:00 on the 20th: 27 h 1 min, two started days, 2 × 10 %
    v = assess(PER_DAY, DATES, at("2026-09-20T03:00:00-04:00"))
    assert v.late_by == timedelta(hours=27, minutes=1) and v.percent == 20
    assert v.message(17.0) == "Submitted 1 day 3 h late: −20% (−17 points)."


def test_the_cap_bounds_the_loss():
    # 3 days 23 h late (just before the late due date): four started days would be 40 %;
    # a cap of 30 % stops it there
    capped = Policy("percent_per_day", percent=10, cap=30)
    assert assess(capped, DATES, at("2026-09-22T23:00:00-04:00")).percent == 30


def test_per_hour():
    # 2 h 30 min late at 2 % per started hour: three hours, 6 %
    hourly = Policy("percent_per_hour", percent=2)
    assert assess(hourly, DATES, at("2026-09-19T02:29:00-04:00")).percent == 6


def test_a_late_day_forgives_a_started_day_before_any_percent():
    with_days = Policy("percent_per_day", percent=10, late_days=1)
    v = assess(with_days, DATES, at("2026-09-20T03:00:00-04:00"))
    # 27 h 1 min: the late day covers 24 h, the 3 h 1 min left start one day: 10 %
    assert (v.late_days_used, v.late_days_left, v.percent) == (1, 0, 10)
    assert (
        v.message(0.4) == "Submitted 1 day 3 h late (1 late day used, 0 left): −10% (−0.4 points)."
    )
    none_left = assess(with_days, DATES, at("2026-09-20T03:00:00-04:00"), late_days_available=0)
    assert (none_left.late_days_used, none_left.percent) == (0, 20)


def test_an_extension_moves_the_due_date_and_the_late_due_date():
    v = assess(PER_DAY, DATES, at("2026-09-20T03:00:00-04:00"), extension=timedelta(days=2))
    assert v.percent == 0 and v.late_by == timedelta(0)
    # the extended due date is 23:59 on the 20th: 12:00 on the 21st is 12 h 1 min after it
    past = assess(PER_DAY, DATES, at("2026-09-21T12:00:00-04:00"), extension=timedelta(days=2))
    assert past.percent == 10 and not past.after_late_due
    # the late due date moves too: 23:59 on the 24th; the 23rd is before it, the 25th after
    assert not assess(
        PER_DAY, DATES, at("2026-09-23T08:00:00-04:00"), extension=timedelta(days=2)
    ).after_late_due
    assert assess(
        PER_DAY, DATES, at("2026-09-25T08:00:00-04:00"), extension=timedelta(days=2)
    ).after_late_due


def test_after_the_late_due_date_the_score_counts_as_zero():
    v = assess(PER_DAY, DATES, at("2026-09-23T08:00:00-04:00"))
    assert v.after_late_due and v.percent == 100
    assert "after the late due date" in v.message(70)


def test_no_due_date_or_no_submission_time_is_not_judged():
    assert assess(PER_DAY, Dates(), at("2026-09-20T03:00:00-04:00")) is None
    assert assess(PER_DAY, DATES, None) is None


def test_the_policy_table_is_checked():
    assert late.policy_from({"kind": "percent_per_day", "percent": 5, "grace": "30m"}) == Policy(
        "percent_per_day", 5.0, 100.0, timedelta(minutes=30), 0
    )
    for bad, says in (
        ({"kind": "percent_per_week", "percent": 1}, "not one of"),
        ({"kind": "percent_per_day"}, "needs a percent"),
        ({"kind": "none", "cap": 120}, "cap is at most 100"),
        ({"kind": "none", "grace": "soon"}, "not a duration"),
        ({"kind": "none", "penalty": 3}, r"unknown setting 'penalty' \(known: kind, percent"),
        (3, "late policy: a table of kind, percent, cap, grace, late_days"),  # `late = 3`
    ):
        with pytest.raises(late.LateError, match=says):
            late.policy_from(bad)


def test_late_days_spent_count_only_the_assignments_before(tmp_path):
    ledger = {
        ("ada@uni.edu", "a1_word_vectors"): 1,
        ("ada@uni.edu", "a3_gated_seq2seq"): 2,
        ("bob@uni.edu", "a1_word_vectors"): 3,
    }
    assert late.spent_before(ledger, "ada@uni.edu", "a2_rnn_bptt") == 1
    assert late.spent_before(ledger, "ada@uni.edu", "a4_transformer") == 3
    assert late.spent_before(ledger, "ada@uni.edu", "a1_word_vectors") == 0
    path = tmp_path / "late_days.csv"
    late.write_ledger(path, ledger)
    assert late.read_ledger(path) == ledger
    path.write_text("student,assignment,days\nada@uni.edu,a1_word_vectors,two\n")
    with pytest.raises(late.LateError, match="line 2"):
        late.read_ledger(path)


def test_the_roster_reads_extensions_and_allowances(tmp_path):
    path = tmp_path / "roster.csv"
    path.write_text(
        "email,name,sid,canvas_id,section,late_days,extension:a1,extension:a2\n"
        "Ada@Uni.edu,Ada Lovelace,1001,501,L01,,2d,\n"
        "bob@uni.edu,Bob,1002,,,5,,36h\n"
    )
    people = roster.load(path)
    ada = people.find(["1001"])
    assert ada.email == "ada@uni.edu" and ada.extensions == {"a1": timedelta(days=2)}
    bob = people.find(["BOB@uni.edu"])
    assert bob.late_days == 5 and bob.extensions == {"a2": timedelta(hours=36)}
    assert people.find(["nobody@uni.edu"]) is None
    path.write_text("email;name;extension:a1\r\nada@uni.edu;Ada Lovelace;2d\r\n")  # a spreadsheet's
    assert roster.load(path).find(["ada@uni.edu"]).extensions == {"a1": timedelta(days=2)}
    path.write_text("email;extension:a1;extension:a2\nada@uni.edu;1,5d;2,5\n")  # decimal commas
    assert roster.load(path).find(["ada@uni.edu"]).extensions == {
        "a1": timedelta(hours=36),
        "a2": timedelta(hours=60),
    }
    path.write_text("name,sid\nAda,1001\n")
    with pytest.raises(roster.RosterError, match="no `email` column"):
        roster.load(path)
    path.write_text("email,extension:a1\nada@uni.edu,soon\n")
    with pytest.raises(roster.RosterError, match="line 2.*not a duration"):
        roster.load(path)
    path.write_text("email\nada@uni.edu\nada@uni.edu\n")
    with pytest.raises(roster.RosterError, match="listed twice"):
        roster.load(path)
