"""Warm templates (issue 22 item 1): a fork of a template that imported numpy/torch once is
isolated exactly as a fresh launcher's worker, and nothing of one submission reaches the next.

The spawn-level tests use the suite's echo worker (conftest.ECHO_WORKER, no grading engine);
each runs the same probe warm and cold and compares, so the cold path is the authority. The engine-level
test grades a sample of the held-out files both ways and wants identical results.
"""

from __future__ import annotations

import ast
import json
import os
import signal
import site
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from grader import sandbox
from grader.course import content
from grader.sandbox import runtime, uids, zygote

sys.path.insert(0, str(Path(__file__).parent))
import heldout_harness  # noqa: E402

PROBE = textwrap.dedent("""
    import os, signal, socket, sys
    status = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines() if ":" in l)
    maps = open("/proc/self/maps").read().splitlines()
    result = {
        "uid": os.getuid(), "euid": os.geteuid(), "gid": os.getgid(), "groups": os.getgroups(),
        "fds": sorted(int(f) for f in os.listdir("/proc/self/fd")),
        "seccomp": status["Seccomp"].strip(), "no_new_privs": status["NoNewPrivs"].strip(),
        "cap_eff": status["CapEff"].strip(), "hostname": socket.gethostname(),
        "cwd": os.getcwd(), "home": os.environ.get("HOME"), "env": sorted(os.environ),
        "shared_writable": [m for m in maps if m.split()[1] == "rw-s"],
        "argv": sys.argv, "main": __name__,
        "signals": [repr(signal.getsignal(s)) for s in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT)],
        "path": sys.path,
        "site_builtins": sorted(n for n in ("exit", "quit", "help", "copyright", "credits", "license")
                                if hasattr(__import__("builtins"), n)),
    }
""")

needs_isolation = pytest.mark.skipif(not sandbox.can_isolate(), reason="needs root and namespaces")


@pytest.fixture
def program(worker_program: Path) -> Path:
    """The suite's echo worker (conftest.ECHO_WORKER)."""
    return worker_program


@pytest.fixture
def warm() -> Iterator[None]:
    was = zygote.enabled()
    zygote.enable()
    try:
        yield
    finally:
        zygote.enable(was)


def ask(proc: sandbox.SandboxProcess, code: str, timeout: float = 30.0) -> dict:
    proc.stdin.write(json.dumps({"code": code}).encode() + b"\n")
    proc.stdin.flush()
    reply = json.loads(proc.readline(timeout))
    if reply["ok"]:
        reply["result"] = ast.literal_eval(reply["result"])  # the worker replies repr(result)
    return reply


def start(
    program: Path, *, warm: bool, files: dict[str, bytes] | None = None
) -> sandbox.SandboxProcess:
    return sandbox.spawn(
        program,
        files or {},
        hide=tuple(content.grader_trees()),
        limits=sandbox.Limits(submission_seconds=60.0),
        warm=("numpy",) if warm else None,
    )


def probe(program: Path, *, warm: bool) -> dict:
    with start(program, warm=warm) as proc:
        reply = ask(proc, PROBE + "\nresult['warm_numpy'] = warm_numpy")
        assert reply["ok"], reply
        return reply["result"]


@needs_isolation
def test_a_warm_worker_is_isolated_as_a_fresh_one(program, warm):
    cold = probe(program, warm=False)
    hot = probe(program, warm=True)
    assert hot["warm_numpy"] and not cold["warm_numpy"]  # the template's import, not its own
    for got in (cold, hot):
        assert got["uid"] == got["euid"] == got["gid"] != 0 and got["groups"] == []
        assert uids.UID_BASE <= got["uid"] < uids.UID_BASE + uids.UID_COUNT
        assert got["seccomp"] == "2" and got["no_new_privs"] == "1"
        assert int(got["cap_eff"], 16) == 0
        assert got["hostname"] == "sandbox"
        assert got["shared_writable"] == []
    assert cold["uid"] != hot["uid"]
    # Only the wire (0, 1, 2) and the descriptors the probe itself opened; the same as cold.
    assert hot["fds"] == cold["fds"] and len(hot["fds"]) <= 7
    # the template starts with -S and is given the site directories: the same import path and
    # the builtins `site` adds, as a fresh `python -I` worker has
    assert (
        hot["site_builtins"]
        == cold["site_builtins"]
        == sorted(["exit", "quit", "help", "copyright", "credits", "license"])
    )
    assert Path(hot["path"][0]).name == Path(cold["path"][0]).name == "scratch"
    assert hot["path"][1:] == cold["path"][1:]
    # signals too: past the file size limit a write raises OSError, as in a fresh interpreter
    for key in (
        "env",
        "main",
        "hostname",
        "seccomp",
        "no_new_privs",
        "cap_eff",
        "groups",
        "signals",
    ):
        assert hot[key] == cold[key], key
    assert Path(hot["cwd"]).name == Path(cold["cwd"]).name == "scratch"
    assert hot["home"] == hot["cwd"] and hot["argv"][0].endswith("echo_worker.py")


@needs_isolation
def test_the_grader_is_out_of_reach_of_a_warm_worker(program, warm):
    grader_file = str(Path(sandbox.__file__).resolve())
    with start(program, warm=True) as proc:
        reply = ask(proc, f"import os\nresult = os.path.exists({grader_file!r})")
        assert reply == {"ok": True, "result": False}
        # /work and /home hold at most the way to the interpreter's prefixes and site folders
        # (a venv may live there; the checkout never shows)
        ways = {
            top: sorted(
                {
                    p.relative_to(top).parts[0]
                    for p in runtime.runtime_paths()
                    if p.is_relative_to(top) and p != Path(top)
                }
            )
            for top in ("/work", "/home")
        }
        look = "import os\nresult = {d: sorted(os.listdir(d)) if os.path.isdir(d) else [] for d in ('/work', '/home')}"
        reply = ask(proc, look)
        assert reply["ok"] and all(set(reply["result"][d]) <= set(ways[d]) for d in ways), (
            reply,
            ways,
        )


HOSTILE = textwrap.dedent("""
    import ctypes, os, subprocess
    libc = ctypes.CDLL(None, use_errno=True)
    key = libc.syscall(248, b"user", b"h12-carry", b"secret", 6, -4)  # add_key (x86_64)
    key_errno = ctypes.get_errno()
    for folder in (".", "/tmp", "/dev/shm"):
        with open(os.path.join(folder, "h12-carry"), "w") as f:
            f.write("secret")
    daemon = subprocess.Popen(["sleep", "300"], start_new_session=True)
    kept = os.open("/dev/null", os.O_RDONLY)
    os.set_inheritable(kept, True)
    result = {"uid": os.getuid(), "key": key, "key_errno": key_errno, "daemon": daemon.pid,
              "fd": kept}
""")

LOOK = textwrap.dedent("""
    import os
    found = [p for p in ("h12-carry", "/tmp/h12-carry", "/dev/shm/h12-carry") if os.path.exists(p)]
    procs = [p for p in os.listdir("/proc") if p.isdigit()]
    cmdlines = [open(f"/proc/{p}/cmdline", "rb").read() for p in procs]
    result = {"uid": os.getuid(), "found": found, "sleepers": [c for c in cmdlines if b"sleep" in c],
              "fds": sorted(int(f) for f in os.listdir("/proc/self/fd"))}
""")


@needs_isolation
def test_a_hostile_submission_in_a_warm_batch_cannot_reach_the_next(program, warm):
    with start(program, warm=True) as first:
        left = ask(first, HOSTILE)
        assert left["ok"], left
        left = left["result"]
        assert left["key"] == -1 and left["key_errno"] == 1  # EPERM: the keyring is closed
    assert uids.pids_of_uid(left["uid"]) == []  # the daemon died with its sandbox
    with start(program, warm=True) as second:
        seen = ask(second, LOOK)["result"]
    with start(program, warm=False) as fresh:
        baseline = ask(fresh, LOOK)["result"]
    assert seen["uid"] != left["uid"]
    assert seen["found"] == [] and seen["sleepers"] == []
    assert seen["fds"] == baseline["fds"]  # nothing the first one opened (or the template holds)


@needs_isolation
def test_a_warm_worker_ends_as_a_fresh_one_would(program, warm):
    for code, words in (
        ("import os; os._exit(3)", "exited with status 3"),
        ("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)", "killed by signal SIGSEGV"),
    ):
        for hot in (False, True):
            with start(program, warm=hot) as proc:
                proc.stdin.write(json.dumps({"code": code}).encode() + b"\n")
                proc.stdin.flush()
                assert proc.wait(10) is not None
                assert proc.exit_description().startswith(words), (hot, proc.exit_description())


@needs_isolation
@pytest.mark.parametrize(
    "source,words,printed",
    [
        ("import sys\nprint('bye', file=sys.stderr)\nsys.exit(5)\n", "exited with status 5", "bye"),
        ("raise ValueError('no luck')\n", "exited with status 1", "ValueError: no luck"),
        (
            "import atexit, sys\natexit.register(lambda: print('at exit', file=sys.stderr))\n",
            "exited with status 0",
            "at exit",
        ),
    ],
)
def test_a_warm_program_ends_as_an_interpreter_would(tmp_path, warm, source, words, printed):
    program = tmp_path / "ends.py"
    program.write_text(source)
    for hot in (False, True):
        with start(program, warm=hot) as proc:
            assert proc.wait(20) is not None
            assert proc.exit_description() == words, hot
            assert printed in proc.output(), hot


@needs_isolation
def test_kill_stops_a_warm_sandbox_and_frees_its_uid(program, warm):
    with start(program, warm=True) as proc:
        ask(proc, "import subprocess\nsubprocess.Popen(['sleep', '300'], start_new_session=True)")
        uid = proc.uid
        began = time.monotonic()
        proc.kill()
        assert time.monotonic() - began < 2.0
        assert proc.poll() is not None
    assert uids.pids_of_uid(uid) == []


def test_a_template_that_died_is_replaced_by_a_fresh_launcher(program, warm):
    with start(program, warm=True) as proc:
        assert ask(proc, "result = warm_numpy")["result"] is True
    template = zygote.template_for(("numpy",))
    assert template is not None
    os.kill(template._popen.pid, signal.SIGKILL)
    template._popen.wait()
    with start(program, warm=True) as proc:  # this one starts cold; the next template is new
        assert ask(proc, "result = 1 + 1")["result"] == 2
    replacement = zygote.template_for(("numpy",))
    assert replacement is not None and replacement is not template


def sample(assignment: str, n: int) -> list[heldout_harness.Item]:
    items = heldout_harness.discover([assignment])
    step = max(1, len(items) // n)
    return items[::step][:n]


@pytest.mark.slow
@pytest.mark.parametrize("assignment,n", [("a1_word_vectors", 6), ("a5_shapes_debugging", 4)])
def test_warm_grading_gives_the_same_results_as_cold(assignment, n, warm):
    items = sample(assignment, n)
    zygote.enable(False)
    cold = [heldout_harness.grade_alone(item) for item in items]
    zygote.enable()
    hot = [heldout_harness.grade_alone(item) for item in items]
    for c, h in zip(cold, hot):
        assert (h.named, h.score, h.max_score, h.error, h.detail) == (
            c.named,
            c.score,
            c.max_score,
            c.error,
            c.detail,
        ), c.item.path.name


HOSTILE_FILES = Path(__file__).parent / "hostile"
CONTAINED_QUICKLY = ("forge", "leave_exit", "leave_signal", "lie", "outlive", "snoop", "talk")


def gradebook(root: Path, out: Path, *, warm: bool, monkeypatch) -> list[str]:
    from grader.app import batch

    monkeypatch.setenv("SEQGRADE_WARM", "1" if warm else "0")
    assert batch.run(root, "a1", jobs=2, out=out, report=None, force=True, quiet=True) == 0
    return out.read_text().splitlines()


@needs_isolation
@pytest.mark.slow
def test_a_warm_batch_of_hostile_and_held_out_submissions_matches_a_cold_one(tmp_path, monkeypatch):
    """Each hostile file (appended to the solution, as in test_hostile.py) is followed by an
    honest submission and a held-out one: whatever the hostile one left, the next must grade
    exactly as in a batch where every submission had a fresh worker."""
    solution = (content.solution_dir("a1_word_vectors") / "word_vectors.py").read_text()
    held_out = [item.text for item in sample("a1_word_vectors", len(CONTAINED_QUICKLY))]
    root = tmp_path / "class"
    for i, name in enumerate(CONTAINED_QUICKLY):
        sources = (
            solution + "\n" + (HOSTILE_FILES / f"{name}.py").read_text(),
            solution,
            held_out[i],
        )
        for j, source in enumerate(sources):
            folder = root / f"s{i:02d}{j}-{name}"
            folder.mkdir(parents=True)
            (folder / "word_vectors.py").write_text(source)
    cold = gradebook(root, tmp_path / "cold.csv", warm=False, monkeypatch=monkeypatch)
    hot = gradebook(root, tmp_path / "warm.csv", warm=True, monkeypatch=monkeypatch)
    assert len(hot) == 3 * len(CONTAINED_QUICKLY) + 1
    assert hot == cold


@needs_isolation
def test_warm_workers_draw_different_random_numbers_as_fresh_ones_do(program, warm):
    """A fresh interpreter seeds Python's, numpy's and torch's generators from the OS; forks of
    one template must not all share the template's state."""
    draw = (
        "import random, numpy, torch\n"
        "result = [random.random(), float(numpy.random.rand()), float(torch.rand(1))]"
    )
    seen = []
    for _ in range(2):
        proc = sandbox.spawn(
            program,
            {},
            limits=sandbox.Limits(submission_seconds=60.0),
            warm=runtime.preload(torch=True),
        )  # the template a grade that uses torch forks from (started once per test process)
        with proc:
            reply = ask(proc, draw)
            assert reply["ok"], reply
            seen.append(reply["result"])
    first, second = seen
    assert all(a != b for a, b in zip(first, second)), seen


SINGLE_GRADE = textwrap.dedent("""
    import json, sys, types
    from grader.app import cli
    from grader.sandbox import zygote
    if sys.argv[4] == "broken":  # a template that cannot start: its first fork falls back
        zygote.launcher = types.SimpleNamespace(
            __file__="/nonexistent/launcher.py", WARM_FILES=("worker.py", "wire.py")
        )
    rc = cli.main(["grade", sys.argv[1], "-a", sys.argv[2], "--results", sys.argv[3]])
    forked = sorted(k for k, t in zygote._templates.items() if t is not None)
    print(json.dumps({"rc": rc, "enabled": zygote.enabled(), "templates": forked}))
""")


_COLD_SINGLE: dict[str, dict] = {}  # the cold grade's results.json, made once for the three runs


@pytest.mark.parametrize("how", ["warm", "cold", "broken"])
def test_a_single_grade_starts_its_template_first_and_grades_as_a_cold_one(tmp_path, how):
    """`seqgrade grade` starts the numpy template before importing the grader (so the two
    overlap on two cores); the grade is the cold one's, and a template that cannot start costs
    nothing but the overlap."""
    import subprocess

    from grader.course import registry

    aid = "a6_pretraining_scale"
    sub = tmp_path / "sub"
    sub.mkdir()
    code = registry.load(aid).code_file
    (sub / code).write_text((content.solution_dir(aid) / code).read_text().replace("0.8", "0.7"))

    def grade(mode: str, out: Path) -> tuple[dict, dict]:
        env = {**os.environ, "SEQGRADE_WARM": "0" if mode == "cold" else "1"}
        run = subprocess.run(
            [sys.executable, "-c", SINGLE_GRADE, str(sub), aid, str(out), mode],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
        assert run.returncode == 0, run.stderr[-2000:]
        data = json.loads(out.read_text())
        data.pop("execution_time")
        return json.loads(run.stdout.strip().splitlines()[-1]), data

    info, got = grade(how, tmp_path / f"{how}.json")
    if how == "warm":
        assert info["enabled"] and info["templates"] == [["numpy", "numpy.random"]]
    else:
        assert info["templates"] == []
    if how == "cold":
        _COLD_SINGLE.setdefault("cold", got)
    elif "cold" not in _COLD_SINGLE:
        _COLD_SINGLE["cold"] = grade("cold", tmp_path / "reference.json")[1]
    assert got == _COLD_SINGLE["cold"]
    assert 0 < got["score"] < 100  # the planted mistake (an 80/10/10 rule of 70/10/20) cost points


def test_the_templates_site_folders_are_those_site_adds_without_running_pth_code(
    tmp_path, monkeypatch
):
    """The warm template starts with -S and is given `runtime.site_dirs()`: the same folders, in
    the same order, as `site` itself adds for a site directory (the authority, run in a fresh
    interpreter), while the .pth file's import line, which site runs, never runs."""
    sitedir, extra, mark = tmp_path / "site", tmp_path / "extra", tmp_path / "ran"
    sitedir.mkdir()
    extra.mkdir()
    (tmp_path / "other").mkdir()
    (sitedir / "b.pth").write_text(f"# a comment\n../extra\nimport os; open({str(mark)!r}, 'w')\n")
    (tmp_path / "lib.zip").write_bytes(b"")  # site adds what exists, a file too
    (sitedir / "a.pth").write_text("../other\n../lib.zip\nnot-there\n\n")
    script = (
        "import site, sys; before = list(sys.path); "
        f"site.addsitedir({str(sitedir)!r}); print([p for p in sys.path if p not in before])"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", script], capture_output=True, text=True
    )
    by_site = ast.literal_eval(done.stdout)
    assert mark.exists()  # site ran the import line
    mark.unlink()
    monkeypatch.setattr(site, "getsitepackages", lambda: [str(sitedir)])
    assert (
        runtime.site_dirs()
        == by_site
        == [
            str(sitedir),
            str(tmp_path / "other"),
            str(tmp_path / "lib.zip"),
            str(extra),
        ]
    )
    assert not mark.exists()
