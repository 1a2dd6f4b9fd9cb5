"""A plain (non-editable) install works from any directory: content travels in the wheel."""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def see_this_venv(py: Path) -> None:
    """A venv made from inside this one sees the base installation's packages, not ours: add
    ours (numpy, torch), whatever layout a newcomer chose."""
    if sys.prefix == sys.base_prefix:
        return
    purelib = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(purelib, "_outer_venv.pth").write_text("\n".join(site.getsitepackages()) + "\n")


def test_wheel_carries_content_and_grades_from_another_directory(tmp_path):
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(REPO),
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path / "dist"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr[-2000:]
    wheel = next((tmp_path / "dist").glob("seqgrade-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "grader/_content/assignments/a1_word_vectors/word_vectors.py" in names
    assert "grader/_content/solutions/a4_transformer/transformer.py" in names
    assert "grader/samples/a4_transformer/buggy/transformer.py" in names
    assert not any(n.startswith("tests/") for n in names)
    venv = tmp_path / "venv"
    # A venv without its own pip (this one's installs into it: `pip --python`), which is 3 of
    # the test's 5 CPU-s when ensurepip copies pip in.
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)],
        check=True,
        timeout=120,
    )
    py = venv / "bin" / "python"
    see_this_venv(py)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(py),
            "install",
            "-q",
            "--no-deps",
            str(wheel),
        ],
        check=True,
        timeout=300,
    )
    # The installed wheel, whatever checkout a developer (or benchmarks/suite_against.py) has
    # put on PYTHONPATH.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    where = subprocess.run(
        [str(py), "-c", "import grader; print(grader.__file__)"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        check=True,
    )
    assert str(venv) in where.stdout
    out = subprocess.run(
        [
            str(venv / "bin" / "seqgrade"),
            "grade",
            str(
                venv
                / "lib"
                / f"python{sys.version_info.major}.{sys.version_info.minor}"
                / "site-packages"
                / "grader"
                / "_content"
                / "solutions"
                / "a2_rnn_bptt"
            ),
            "-a",
            "a2",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "total 100 / 100" in out.stdout


# ------------------------------------------------------- the autograder bundle on its target


TARGETS = ("3.10", "3.12")  # Ubuntu 22.04's and 24.04's Python
UNREACHABLE = (
    "NewConnectionError",
    "Name or service not known",
    "Temporary failure in name resolution",
    "Network is unreachable",
    "Max retries exceeded",
    "ConnectTimeout",
)


# Gradescope's image: CPython on x86-64 Linux, binary wheels only (the container has no compiler).
TARGET_OPTIONS = (
    "--only-binary=:all:",
    "--implementation",
    "cp",
    "--platform",
    "manylinux2014_x86_64",
    "--platform",
    "manylinux_2_28_x86_64",
)


def _bundle_requirements(tmp_path: Path, aid: str = "a2_rnn_bptt") -> list[str]:
    from grader.app.bundles import build_autograder

    with zipfile.ZipFile(build_autograder(aid, tmp_path / "bundle.zip")) as zf:
        text = zf.read("requirements.txt").decode()
    return [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]


def _for_python(requirements: list[str], version: str) -> list[str]:
    """The requirements whose environment markers hold on `version` (pip evaluates markers on
    the running interpreter even with --python-version), markers dropped."""
    from packaging.markers import Marker

    out = []
    for line in requirements:
        req, _, marker = line.partition(";")
        if not marker or Marker(marker).evaluate(
            {"python_version": version, "python_full_version": version + ".0"}
        ):
            out.append(req.strip())
    return out


def _dry_run(
    tmp_path: Path, version: str, requirements: list[str], *extra: str
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--ignore-installed",
            *TARGET_OPTIONS,
            "--python-version",
            version,
            "--target",
            str(tmp_path / "target"),
            *extra,
            *requirements,
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )


def _versions(version: str, pin: str) -> subprocess.CompletedProcess:
    """`pip index versions` for the pinned package on the target: the versions with a file
    that pip's own finder accepts there. The dry run would download the whole wheel to read its
    metadata (half a gigabyte for torch, on an index without PEP 658 metadata)."""
    name = pin.partition("==")[0]
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "index",
            "versions",
            name,
            *TARGET_OPTIONS,
            "--python-version",
            version,
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.fixture(scope="module")
def started(request, tmp_path_factory) -> Iterator[dict]:
    """The module's pip runs, started together: each mostly waits on the package index, so the
    four dry runs and the two setup.sh installs (one per target) overlap instead of running in
    turn. A test waits for its own run (`started[kind, version].result()`); only the runs of the
    tests selected are started."""
    from grader.app.bundles import TORCH_PIN

    wanted = {item.originalname for item in request.session.items if item.module is request.module}

    tmp = tmp_path_factory.mktemp("pip")
    requirements = _bundle_requirements(tmp)
    with ThreadPoolExecutor(max_workers=3 * len(TARGETS)) as pool:
        runs: dict = {("requirements", None): requirements}
        for version in TARGETS:
            if "test_bundle_requirements_resolve_on_the_target_python" in wanted:
                runs["resolve", version] = pool.submit(
                    _dry_run, tmp / f"resolve{version}", version, _for_python(requirements, version)
                )
            if "test_the_pinned_torch_exists_for_the_target_python" in wanted:
                # the plain index: setup.sh's fallback
                runs["torch", version] = pool.submit(_versions, version, TORCH_PIN)
            python = _pyenv_python(version)
            wants_setup = (
                "test_a_numpy_bundle_installs_and_grades_under_the_target_python" in wanted
            )
            if python is not None and wants_setup:
                runs["setup", version] = pool.submit(
                    _setup_bundle, tmp / f"autograder{version}", python
                )
        yield runs


@pytest.mark.parametrize("version", TARGETS)
def test_bundle_requirements_resolve_on_the_target_python(started, version):
    requirements = _for_python(started["requirements", None], version)
    assert any(r.startswith("tomli") for r in requirements) == (version < "3.11")
    out = started["resolve", version].result()
    if out.returncode != 0 and any(s in out.stdout + out.stderr for s in UNREACHABLE):
        pytest.skip(f"the package index is unreachable: {out.stderr.strip().splitlines()[-1]}")
    assert out.returncode == 0, out.stdout[-1500:] + out.stderr[-1500:]
    would = out.stdout.split("Would install", 1)[-1]
    for name in ("numpy", "scipy", "sympy", "mpmath"):
        assert name in would, would


@pytest.mark.parametrize("version", TARGETS)
def test_the_pinned_torch_exists_for_the_target_python(started, version):
    from grader.app.bundles import TORCH_PIN

    out = started["torch", version].result()
    listed = out.stdout.partition("Available versions:")[2].splitlines()[:1]
    found = [v.strip() for v in listed[0].split(",")] if listed else []
    if not found and any(s in out.stdout + out.stderr for s in UNREACHABLE):
        pytest.skip("the package index is unreachable")  # a retry that then got through is not
    assert TORCH_PIN.partition("==")[2] in found, out.stdout[-1500:] + out.stderr[-1500:]


def _pyenv_python(version: str) -> Path | None:
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    found = sorted(root.glob(f"{version}.*/bin/python"))
    return found[-1] if found else None


AID, KEY = "a2_rnn_bptt", "ada@example.edu"


def _setup_bundle(
    root: Path, python: Path
) -> tuple[Path, dict[str, str], subprocess.CompletedProcess]:
    """a2's bundle unpacked into a fake /autograder at `root`, its setup.sh run with `python`
    (no torch: the grader never imports it)."""
    from grader.app.bundles import build_autograder

    root.mkdir(parents=True)
    with zipfile.ZipFile(build_autograder(AID, root.parent / f"{root.name}.zip")) as zf:
        zf.extractall(root / "source")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env.update(SEQGRADE_GRADESCOPE_ROOT=str(root), PYTHON=str(python), SEQGRADE_SKIP_TORCH="1")
    # Without pip's byte-compiling of every installed module (10 of the install's 14 CPU-s):
    # the same files are installed, and the run below compiles only what it imports.
    env["PIP_COMPILE"] = "0"
    setup = subprocess.run(
        ["bash", str(root / "source" / "setup.sh")],
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    return root, env, setup


@pytest.mark.parametrize("version", TARGETS)
def test_a_numpy_bundle_installs_and_grades_under_the_target_python(started, version):
    """setup.sh with pyenv's interpreter (no torch: the grader never imports it), then run_autograder."""
    if ("setup", version) not in started:
        pytest.skip(f"no Python {version} under pyenv on this machine")
    aid, key = AID, KEY
    from grader.course.content import solution_dir

    root, env, setup = started["setup", version].result()
    if setup.returncode != 0 and any(s in setup.stdout + setup.stderr for s in UNREACHABLE):
        pytest.skip("the package index is unreachable")
    assert setup.returncode == 0, setup.stdout[-1500:] + setup.stderr[-1500:]
    venv_python = root / "venv" / "bin" / "python"
    got = subprocess.run(
        [str(venv_python), "-c", "import sys, numpy, scipy.special; print(sys.version_info[:2])"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout
    assert got.strip() == str(tuple(int(x) for x in version.split("."))), got
    (root / "submission").mkdir()
    (root / "submission" / "rnn.py").write_text((solution_dir(aid) / "rnn.py").read_text())
    answers = subprocess.run(
        [sys.executable, "answer_key.py", key],
        cwd=solution_dir(aid),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    (root / "submission" / "answers.toml").write_text(answers)
    (root / "submission_metadata.json").write_text(
        json.dumps({"users": [{"id": 5, "email": key, "sid": "S5"}]})
    )
    run = subprocess.run(
        ["bash", str(root / "source" / "run_autograder")],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    data = json.loads((root / "results" / "results.json").read_text())
    assert data["score"] == 100, [
        (t["name"], t["output"][:300]) for t in data["tests"] if t["status"] == "failed"
    ]
    assert data["extra_data"]["student"] == key


def _requirements_met(tmp_path: Path, lines: list[str]) -> bool:
    """setup.sh's check before `pip install -r requirements.txt`, run on `lines`, with a made-up
    distribution `fakepkg` installed whose extra `x` needs a package that is nowhere."""
    import re

    from grader.app.bundles import SETUP_SH

    script = re.search(r"<<'PY'\n(.*?)\nPY\n", SETUP_SH, re.S)
    assert script is not None, "setup.sh checks the requirements with an inline script"
    info = tmp_path / "site" / "fakepkg-1.0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: fakepkg\nVersion: 1.0\n"
        "Provides-Extra: x\nRequires-Dist: numpy>=1\n"
        'Requires-Dist: nosuchpkg-seqgrade>=1; extra == "x"\n'
    )
    (tmp_path / "requirements.txt").write_text("# a comment\n" + "\n".join(lines) + "\n")
    run = subprocess.run(
        [sys.executable, "-", str(tmp_path / "requirements.txt")],
        input=script.group(1),
        env={**os.environ, "PYTHONPATH": str(tmp_path / "site")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    return run.returncode == 0


def test_setup_runs_pip_only_when_a_requirement_is_missing_or_out_of_range(tmp_path):
    """What pip would install anything for (a package, a version, a package's own requirement,
    one an extra asks for) fails the check; what it would only confirm passes it."""
    from grader.app.bundles import REQUIREMENTS

    assert _requirements_met(tmp_path, list(REQUIREMENTS))  # this environment has them all
    assert _requirements_met(tmp_path, ["fakepkg==1.0", 'nosuchpkg-seqgrade; python_version < "3"'])
    for missing in ("numpy<1", "nosuchpkg-seqgrade", "fakepkg>1", "fakepkg[x]"):
        assert not _requirements_met(tmp_path, ["sympy", missing]), missing


def _imported_modules(files: list[Path]) -> dict[str, set[str]]:
    """Top-level module name -> the files that import it (imports, and `pytest.importorskip`)."""
    import ast

    found: dict[str, set[str]] = {}
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif (
                isinstance(node, ast.Call)
                and getattr(node.func, "attr", None) == "importorskip"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                names = [node.args[0].value]
            else:
                continue
            for name in names:
                found.setdefault(name.split(".")[0], set()).add(path.relative_to(REPO).as_posix())
    return found


def _installed_by(requirements: list[str]) -> set[str]:
    """Every distribution (canonical name) that installing `requirements` brings: each one and,
    recursively, what each requires under the extras asked of it."""
    from importlib import metadata

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    todo = [(Requirement(r), ("",)) for r in requirements]
    asked: set[tuple[str, tuple[str, ...]]] = set()  # (distribution, its extras) walked
    while todo:
        req, extras = todo.pop()
        if req.marker and not any(req.marker.evaluate({"extra": e}) for e in extras):
            continue
        key = (canonicalize_name(req.name), tuple(sorted(req.extras)))
        if key in asked:
            continue
        asked.add(key)
        try:
            needs = metadata.distribution(req.name).requires or []
        except metadata.PackageNotFoundError:
            continue  # not installed here: pip would fail on it, which another test sees
        todo += [(Requirement(r), ("", *req.extras)) for r in needs]
    return {name for name, _ in asked}


def test_every_package_the_tests_and_benchmarks_import_is_installed_by_the_dev_extra():
    """`pip install -e ".[dev]"` on a fresh machine is the README's whole set-up: a module the
    tests or benchmarks import must come with it (declared, or required by what is declared),
    not from whatever else this machine happens to have (scipy once did: a fresh venv failed the
    mutation targets and skipped a module of outside-authority tests)."""
    from importlib import metadata

    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    declared = [*project["dependencies"], *project["optional-dependencies"]["dev"]]
    brought = _installed_by(declared)  # what this Python gets
    brought |= {canonicalize_name(Requirement(r).name) for r in declared}  # tomli, for 3.10
    files = sorted((REPO / "tests").rglob("*.py")) + sorted((REPO / "benchmarks").rglob("*.py"))
    ours = {p.stem for p in files} | {"grader", "reference"}
    owners = metadata.packages_distributions()
    missing = {}
    for module, users in sorted(_imported_modules(files).items()):
        if module in sys.stdlib_module_names or module in ours:
            continue
        dists = {canonicalize_name(d) for d in owners.get(module, [module])}
        if not dists & brought:
            missing[module] = sorted(users)[:3]
    assert missing == {}, "add these to pyproject's dev extra: " + repr(missing)
