"""The Gradescope bundles: built, unpacked into a fake container root, set up, run.

Every assignment's autograder is installed the way Gradescope does it (setup.sh, here into
a virtual environment that sees this interpreter's packages, so a5 reuses its torch) and
run with Gradescope's full metadata (`users[0]` with id, email, sid, name).
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import jsonschema
import pytest
from conftest import student_pytest

from grader.app.bundles import REQUIREMENTS, TORCH_PIN, build_autograder, build_handout
from grader.course import registry, term
from grader.course.content import assignment_dir, samples_dir, solution_dir
from grader.reports.results_json import SCHEMA

READY = [aid for aid in registry.available() if solution_dir(aid).is_dir()]
EMAIL = "Ada.Lovelace@Example.edu "  # as Gradescope might hold it: the key is trimmed, lower-cased
KEY = "ada.lovelace@example.edu"
META = {
    "users": [{"id": 98765, "email": EMAIL, "sid": "S1815", "name": "Ada Lovelace"}],
    "due_date": "2026-12-01T00:00:00",
}


@functools.cache  # a text: the same for every test that asks for the same key
def answers_for(aid: str, key: str | None) -> str:
    """The solution's answers.toml for one variant key, from the instructor's answer_key.py."""
    run = subprocess.run(
        [sys.executable, "answer_key.py", *([key] if key else [])],
        cwd=solution_dir(aid),
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return run.stdout


def solution_files(aid: str, key: str | None) -> dict[str, str]:
    a = registry.load(aid)
    files = {a.code_file: (solution_dir(aid) / a.code_file).read_text()} if a.code_file else {}
    files["answers.toml"] = answers_for(aid, key)
    return files


class Container:
    """An /autograder root with the bundle set up once; `run` grades one submission in it."""

    def __init__(self, base: Path, aid: str, term_file: Path | None = None):
        """`term_file`: a term.toml carried in the bundle, as `seqgrade autograder --term` does."""
        self.root, self.aid = base / "autograder", aid
        (self.root / "source").mkdir(parents=True)
        extra = term.bundle_files(term_file, aid) if term_file is not None else None
        with zipfile.ZipFile(build_autograder(aid, base / "autograder.zip", extra)) as zf:
            zf.extractall(self.root / "source")
        self.env = {
            **os.environ,
            "SEQGRADE_GRADESCOPE_ROOT": str(self.root),
            "PYTHON": sys.executable,
        }
        self.env.pop("PYTHONPATH", None)
        setup = subprocess.run(
            ["bash", str(self.root / "source" / "setup.sh")],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert setup.returncode == 0, setup.stdout[-2000:] + setup.stderr[-2000:]
        shutil.copy(self.root / "source" / "run_autograder", self.root / "run_autograder")

    def run(
        self,
        files: dict[str, str] | None,
        metadata: dict | None = META,
        env: dict[str, str] | None = None,
    ) -> tuple[dict, str]:
        sub = self.root / "submission"
        shutil.rmtree(sub, ignore_errors=True)
        sub.mkdir()
        for name, text in (files or {}).items():
            (sub / name).write_text(text)
        meta = self.root / "submission_metadata.json"
        meta.unlink(missing_ok=True)
        if metadata is not None:
            meta.write_text(json.dumps(metadata))
        run = subprocess.run(
            ["bash", str(self.root / "run_autograder")],
            env={**self.env, **(env or {})},
            cwd=self.root,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert run.returncode == 0, run.stderr[-2000:]
        data = json.loads((self.root / "results" / "results.json").read_text())
        jsonschema.validate(data, SCHEMA)
        return data, run.stdout


@pytest.fixture(scope="module")
def containers() -> dict[str, Container]:
    """The module's set-up containers, one per assignment, made when a test first asks."""
    return {}


@pytest.fixture
def container(request, containers, tmp_path_factory) -> Container:
    """The assignment's container (parametrized indirectly): set up once for the whole module,
    whatever order the tests of different parametrizations run in."""
    aid = request.param
    if aid not in containers:
        containers[aid] = Container(tmp_path_factory.mktemp(aid), aid)
    return containers[aid]


FIRST = READY[:1]
A2 = [a for a in READY if a == "a2_rnn_bptt"]  # per-student written numbers and hidden cases


def graded(data: dict) -> list[dict]:
    return [t for t in data["tests"] if t["extra_data"]["kind"] != "answer-key"]


@pytest.mark.parametrize("container", READY, indirect=True)
def test_every_assignment_in_the_container(container: Container) -> None:
    aid = container.aid
    data, stdout = container.run(solution_files(aid, KEY))
    assert data["score"] == sum(t["max_score"] for t in data["tests"]) == 100, [
        (t["name"], t["output"][:300]) for t in data["tests"] if t["status"] == "failed"
    ]
    assert data["extra_data"]["assignment"] == aid and data["extra_data"]["student"] == KEY
    assert "98765" not in json.dumps(data)  # Gradescope's internal id is never the key
    assert "not isolated" not in data["output"]  # the instructor's note: stdout and extra_data
    assert "sandbox:" in stdout and f"'{KEY}'" in stdout
    keyed = [t for t in graded(data) if KEY in t["output"]]
    assert keyed, "per-student questions name the variant key"
    [key_test] = [t for t in data["tests"] if t["extra_data"]["kind"] == "answer-key"]
    assert key_test["max_score"] == 0 and key_test["visibility"] == "after_due_date"

    buggy = samples_dir() / aid / "buggy"
    if buggy.is_dir():
        files = {f.name: f.read_text() for f in buggy.iterdir() if f.is_file()}
        data, _ = container.run(files)
        assert 0 < data["score"] < 100
        assert any(t["extra_data"]["misconceptions"] for t in data["tests"])
    else:  # the solution with its first code question's function broken
        a = registry.load(aid)
        files = solution_files(aid, KEY)
        first = next(q for q in a.questions if q.kind == "code")
        files[a.code_file] += f"\n\ndef {first.function}(*args, **kwargs):\n    return None\n"
        data, _ = container.run(files)
        assert 0 < data["score"] < 100
        assert (
            next(t for t in data["tests"] if t["extra_data"]["question"] == first.id)["score"] == 0
        )

    data, _ = container.run(None)  # an empty submission
    assert data["score"] == 0 and all(t["output"] for t in data["tests"])


@pytest.mark.parametrize("container", FIRST, indirect=True)
def test_no_metadata_grades_the_default_variant_and_says_so(container: Container) -> None:
    data, _ = container.run(solution_files(container.aid, None), metadata=None)
    assert data["score"] == 100
    assert "default variant was used" in data["output"]


@pytest.mark.parametrize("container", A2, indirect=True)
def test_group_submission_uses_the_first_members_key(container: Container) -> None:
    group = {
        "users": [{"id": 1, "email": "bo@example.edu", "sid": "S2", "name": "Bo"}, *META["users"]]
    }
    data, _ = container.run(solution_files(container.aid, "bo@example.edu"), metadata=group)
    assert data["score"] == 100 and data["extra_data"]["student"] == "bo@example.edu"
    assert "group submission of 2" in data["output"]


@pytest.mark.parametrize("container", FIRST, indirect=True)
def test_a_broken_bundle_still_writes_an_error_entry(container: Container) -> None:
    marker = container.root / "source" / "seqgrade_assignment.txt"
    good = marker.read_text()
    marker.write_text("no-such-assignment\n")
    try:
        data, _ = container.run(solution_files(container.aid, KEY))
    finally:
        marker.write_text(good)
    assert data["tests"][0]["extra_data"]["kind"] == "error" and data["score"] == 0
    # No Python able to run the grader at all: run_autograder writes the error entry itself.
    data, _ = container.run(
        solution_files(container.aid, KEY),
        env={"SEQGRADE_VENV": str(container.root / "nowhere"), "PYTHON": "/bin/false"},
    )
    assert data["tests"][0]["extra_data"]["kind"] == "error" and "could not start" in data["output"]


def test_a_missing_source_folder_still_writes_results(tmp_path: Path) -> None:
    if not READY:
        pytest.skip("no assignment installed")
    root = tmp_path / "autograder"
    with zipfile.ZipFile(build_autograder(READY[0], tmp_path / "a.zip")) as zf:
        zf.extract("run_autograder", tmp_path)
    root.mkdir()
    env = {**os.environ, "SEQGRADE_GRADESCOPE_ROOT": str(root)}
    run = subprocess.run(
        ["bash", str(tmp_path / "run_autograder")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0
    data = json.loads((root / "results" / "results.json").read_text())
    jsonschema.validate(data, SCHEMA)
    assert data["tests"][0]["extra_data"]["kind"] == "error"


@pytest.mark.parametrize("aid", READY)
def test_autograder_zip_holds_only_this_assignment(tmp_path, aid):
    with zipfile.ZipFile(build_autograder(aid, tmp_path / "a.zip")) as zf:
        names = zf.namelist()
        requirements = zf.read("requirements.txt").decode()
        setup = zf.read("setup.sh").decode()
    others = [a for a in registry.ASSIGNMENT_IDS if a != aid]
    # the suite: one module, or a package of topic modules
    assert f"grader/suites/{aid}.py" in names or f"grader/suites/{aid}/__init__.py" in names
    assert not any(f"suites/{o}" in n for o in others for n in names)
    assert not any(n.startswith("solutions/") or "/solutions/" in n for n in names)
    assert not any("samples/" in n for n in names)
    lines = [ln for ln in requirements.splitlines() if ln and not ln.startswith("#")]
    assert lines == list(REQUIREMENTS)
    assert not any("==" in ln for ln in lines), (
        "ranges for the target, not the build machine's pins"
    )
    assert "lark" not in requirements and any(ln.startswith("mpmath") for ln in lines)
    assert any(ln.startswith("tomli") and 'python_version < "3.11"' in ln for ln in lines)
    assert TORCH_PIN in setup and "download.pytorch.org/whl/cpu" in setup and "-m venv" in setup


_ALIASES = {"np": "numpy"}  # how the handouts and the feedback write numpy


def test_every_library_a_handout_or_the_feedback_names_is_in_the_image_or_said_not_to_be():
    """A library the handout allows or the feedback suggests (a1's `scipy.special.expit`) must be
    importable where Gradescope grades: else a student who follows the text loses the question to
    a missing import. A name outside the image is one the suite lists as a shortcut (it costs the
    question anyway) or one the same text says is not installed. Libraries are the third-party
    distributions installed here and the shortcuts' packages; other dotted names are the handout's
    own files, variables or methods."""
    import re
    from importlib.metadata import packages_distributions

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    from grader import catalog

    image = {canonicalize_name(Requirement(r).name) for r in (*REQUIREMENTS, TORCH_PIN)}
    distributions = packages_distributions()  # top-level module -> the distributions holding it
    shortcuts = {
        name
        for aid in registry.available()
        for q in registry.load(aid).questions
        for name in getattr(q, "forbidden", ())
    }
    texts = {f"{aid}'s README": (assignment_dir(aid) / "README.md").read_text() for aid in READY}
    texts["the misconception catalog"] = "\n".join(
        f"{catalog.get(m).title}\n{catalog.get(m).explanation}" for m in catalog.all_ids()
    )
    named, outside = set(), []
    for where, text in texts.items():
        for dotted in set(re.findall(r"`([A-Za-z_]\w*(?:\.\w+)+)", text)):
            root, _, rest = dotted.partition(".")
            root = _ALIASES.get(root, root)
            dists = {canonicalize_name(d) for d in distributions.get(root, ())}
            shortcut = f"{root}.{rest}" in shortcuts
            if root in sys.stdlib_module_names or root in {"grader", "reference"}:
                continue
            if not dists and not shortcut:
                continue  # not a library: the handout's own module, a variable, a method
            named.add(root)
            said_missing = re.search(rf"\b{root}\b[^.]*\bnot installed", text)
            if not dists & image and not shortcut and not said_missing:
                outside.append((where, dotted))
    assert {"numpy", "scipy", "torch"} <= named  # the scan reads what the texts name
    assert not outside, outside


@pytest.mark.parametrize("aid", READY)
def test_handout_has_no_hidden_material_and_grades_to_zero(tmp_path, aid):
    z = build_handout(aid, tmp_path / "handout.zip")
    with zipfile.ZipFile(z) as zf:
        names = zf.namelist()
        zf.extractall(tmp_path / "h")
    assert all(n.startswith(f"{aid}/") for n in names)
    assert not any("suites" in n or "solutions" in n or n.endswith("answer_key.py") for n in names)
    assert (
        f"{aid}/answers.toml" in names
        and f"{aid}/variant.py" in names
        and f"{aid}/README.md" in names
    )
    from grader.engine.grade import grade_submission

    report = grade_submission(tmp_path / "h" / aid, registry.load(aid))
    assert report.score == 0 and report.grader_error is None


@pytest.mark.parametrize("aid", READY[:2])
def test_handout_public_tests_run_with_pytest(tmp_path, aid):
    with zipfile.ZipFile(build_handout(aid, tmp_path / "handout.zip")) as zf:
        zf.extractall(tmp_path / "h")
    run = student_pytest(tmp_path / "h" / aid, timeout=300)
    # The stub fails its public tests (it raises NotImplementedError) but pytest runs them.
    assert run.returncode == 1 and "NotImplementedError" in run.stdout, run.stdout[-2000:]


def test_variant_py_prints_the_numbers_the_grader_uses() -> None:
    from grader.course import variants

    out = subprocess.run(
        [sys.executable, "variant.py", EMAIL],
        cwd=assignment_dir("a2_rnn_bptt"),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    ce = variants.numbers("a2_rnn_bptt", KEY)["ce_nats"]
    assert f"CE = {ce} nats" in out and KEY in out


@pytest.mark.parametrize("container", A2, indirect=True)
def test_one_key_everywhere_container_batch_grade_and_variant_py(
    container: Container, tmp_path: Path
) -> None:
    """One submission with full metadata: the same score in the container, a batch of the
    Gradescope export, `seqgrade grade --student EMAIL`, with answers from `variant.py EMAIL`."""
    files = solution_files(container.aid, EMAIL)  # answer_key.py takes its numbers from variant.py
    scores = {"container": container.run(files)[0]["score"]}
    export = tmp_path / "export"
    (export / "submission_4711").mkdir(parents=True)
    for name, text in files.items():
        (export / "submission_4711" / name).write_text(text)
    (export / "submission_metadata.yml").write_text(
        "submission_4711:\n  :submitters:\n  - :name: Ada Lovelace\n    :sid: S1815\n"
        f"    :email: '{EMAIL}'\n  :created_at: 2026-11-30 10:00:00\n"
    )
    with zipfile.ZipFile(
        export / "bo@example.edu.zip", "w"
    ) as zf:  # no metadata: the zip's stem is the key
        for name, text in solution_files(container.aid, "bo@example.edu").items():
            zf.writestr(name, text)
    seqgrade = shutil.which("seqgrade") or "seqgrade"
    batch = subprocess.run(
        [
            seqgrade,
            "batch",
            str(export),
            "-a",
            "a2",
            "--jobs",
            "1",
            "--out",
            str(tmp_path / "grades.csv"),
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert batch.returncode == 0, batch.stderr[-2000:]
    results = tmp_path / "grades_results"
    scores["batch"] = json.loads((results / "submission_4711.json").read_text())["score"]
    assert json.loads((results / "bo@example.edu.zip.json").read_text())["score"] == 100
    grade = subprocess.run(
        [
            seqgrade,
            "grade",
            str(export / "submission_4711"),
            "-a",
            "a2",
            "--student",
            EMAIL,
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    scores["grade --student"] = json.loads(grade.stdout)["score"]
    assert scores == {"container": 100, "batch": 100, "grade --student": 100}


@pytest.mark.parametrize("container", FIRST, indirect=True)
def test_the_bundled_term_is_applied_in_the_container(container: Container, tmp_path) -> None:
    """The term's files where `seqgrade autograder --term` puts them: a late submission loses
    its share by Gradescope's own dates, and an override shows under its question."""
    from grader.course.term import BUNDLE_DIR

    folder = container.root / "source" / BUNDLE_DIR
    (folder / "overrides").mkdir(parents=True)
    (folder / "term.toml").write_text(
        'roster = "roster.csv"\noverrides = "overrides"\n'
        '[late]\nkind = "percent_per_day"\npercent = 10\n'
    )
    (folder / "roster.csv").write_text("email,extension:a1\nbob@example.edu,2d\n")
    short = container.aid.split("_")[0]
    question = registry.load(container.aid).questions[0]
    (folder / "overrides" / f"{short}.toml").write_text(
        f'[[override]]\nstudent = "{KEY}"\nquestion = "{question.id}"\ndelta = -1\n'
        'comment = "Checked by hand."\n'
    )
    late = {
        **META,
        "created_at": "2026-12-02T10:00:00.000000-05:00",  # 10 h 1 min after the due date
        "assignment": {"due_date": "2026-12-01T23:59:00.000000-05:00", "late_due_date": None},
    }
    try:
        data, _ = container.run(solution_files(container.aid, KEY), late)
        top = sum(q.points for q in registry.load(container.aid).questions)
        # full marks, one point taken by the override, then −10 % for one started day
        assert data["score"] == pytest.approx((top - 1) * 0.9)
        assert data["output"].startswith("**Late submission.** Submitted 10 h 1 min late: −10%")
        first = next(t for t in data["tests"] if t["extra_data"].get("question") == question.id)
        assert first["output"].endswith(
            f"**Adjusted by the course staff:** {question.points:g} → {question.points - 1:g} points. "
            "Checked by hand."
        )
        assert data["extra_data"]["adjustments"]["raw_score"] == top
    finally:
        shutil.rmtree(folder)
