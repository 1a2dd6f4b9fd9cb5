"""The sandbox at the spawn level, with a tiny worker of our own (no grading engine involved).

The worker reads JSON lines {"code": ...} on the protocol channel, runs the code (the
"submission's" action) and answers {"ok": ..., "result": repr(result)} or the error. Each
test plays one attack class of the issue and asserts what the sandbox must hold. Tests that
need root and namespaces skip elsewhere; the non-isolated fallbacks are tested everywhere.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path

import pytest
from conftest import processes_with, wait_until

from grader import sandbox
from grader.course import content
from grader.sandbox import modes, uids
from grader.sandbox import runtime as sandbox_runtime

needs_isolation = pytest.mark.skipif(not sandbox.can_isolate(), reason="needs root and namespaces")
REPO = Path(__file__).resolve().parents[1]


SLEEPER = "import subprocess, sys; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)', '{token}'], start_new_session=True)"
# The classic daemon: a double fork whose middle process has ended (reaped by pid, not by
# os.wait(), which could reap another child that had exited first and return at once) by the
# time the snippet returns.
DAEMON = textwrap.dedent("""
    import os, sys, time
    middle = os.fork()
    if middle == 0:
        os.setsid()
        if os.fork() == 0:
            os.execv(sys.executable, [sys.executable, '-c', 'import time; time.sleep(600)', '{token}'])
        os._exit(0)
    os.waitpid(middle, 0)
""")


# --------------------------------------------------------------------------- basics


def test_roundtrip_cwd_files_and_a_minimal_environment(spawn, monkeypatch):
    monkeypatch.setenv("SEQGRADE_TEST_SECRET", "hunter2")
    w = spawn(files={"student.py": b"x = 41\n", "data/table.txt": b"abc"})
    assert w.value("import os; result = os.getcwd()") == str(w.proc.scratch)
    assert w.value("import student; result = student.x + 1") == 42
    assert w.value("result = open('data/table.txt').read()") == "abc"
    env = w.value("import os; result = dict(os.environ)")
    assert "SEQGRADE_TEST_SECRET" not in env and "hunter2" not in json.dumps(env)
    assert env["HOME"] == str(w.proc.scratch) and env["OMP_NUM_THREADS"] == "1"
    assert set(env) <= {
        "PATH",
        "HOME",
        "LANG",
        "OMP_NUM_THREADS",
        "MKL_NUM_THREADS",
        "OPENBLAS_NUM_THREADS",
        "PYTHONDONTWRITEBYTECODE",
        "USER",
        "LOGNAME",
    }
    w.ask("print('hello from the student'); import sys; print('to stderr', file=sys.stderr)")
    w.proc.kill()
    assert "hello from the student" in w.proc.output() and "to stderr" in w.proc.output()
    assert not w.proc.scratch.exists()


def test_kill_is_idempotent_and_describes_a_reason(spawn):
    w = spawn()
    w.proc.kill(reason="stopped after 10 s")
    w.proc.kill()
    w.proc.kill(reason="something else")
    assert w.proc.poll() is not None
    assert w.proc.exit_description() == "stopped after 10 s"


def test_symlinks_in_a_submission_folder_are_not_followed(spawn, tmp_path):
    folder = tmp_path / "submission"
    folder.mkdir()
    (folder / "student.py").write_text("x = 1\n")
    (folder / "answers.toml").symlink_to(REPO / "grader" / "__init__.py")
    w = spawn(files=folder)
    assert w.value("import os; result = sorted(os.listdir('.'))") == [
        "echo_worker.py",
        "student.py",
    ]


def test_grader_trees_cover_the_grader_the_reference_the_solutions_and_the_checkout():
    hidden = content.grader_trees()
    assert {REPO / "grader", REPO / "solutions", REPO / "reference", REPO / "tests"} <= set(hidden)
    assert REPO in hidden  # a checkout: the sandbox covers it unless it holds the interpreter


# --------------------------------------------------------------------------- 2. reading the answers


@needs_isolation
def test_grader_files_are_invisible_and_unimportable(spawn):
    w = spawn()
    assert w.proc.isolated and w.proc.warning is None
    reply = w.ask(f"open({str(REPO / 'grader' / '__init__.py')!r}).read()")
    assert not reply["ok"] and "No such file" in reply["error"]
    for name in ("grader", "reference", "solutions"):
        # absent, or (a copy inside site-packages, covered) an empty namespace package
        contents = w.value(f"""
            import importlib, os
            try:
                module = importlib.import_module({name!r})
                result = [os.listdir(p) for p in module.__path__]
            except ModuleNotFoundError:
                result = 'absent'
        """)
        assert contents == "absent" or all(listing == [] for listing in contents), (name, contents)
    for name in ("grader.course.content", "grader.sandbox.launcher", "reference.functional"):
        reply = w.ask(f"import {name}")
        assert not reply["ok"] and "ModuleNotFoundError" in reply["error"], reply
    for path in [REPO, *content.grader_trees()]:
        listing = w.value(
            f"import os; result = os.path.exists({str(path)!r}) and os.listdir({str(path)!r})"
        )
        assert listing in (False, []) or set(listing) <= ways_to_runtime(path), (path, listing)


@pytest.mark.slow  # over 5 s on two cores: the full suite's, not the developer loop's
@needs_isolation
def test_walking_the_file_system_finds_no_grader_file(spawn):
    """No file anywhere in the worker's view has the content of one of the grader's files."""
    digests: dict[str, list[str]] = {}
    for tree in content.grader_trees():
        # a venv inside the checkout is the worker's own interpreter, bound on purpose
        runtime = {
            p for p in sandbox_runtime.runtime_paths() if p.is_relative_to(tree) and p != tree
        }
        for top, dirs, files in os.walk(tree):
            # .git holds copies of git's own templates (hooks/*.sample), which /usr/share has too
            dirs[:] = [
                d
                for d in dirs
                if d not in ("__pycache__", ".git")
                and not any(r.is_relative_to(Path(top) / d) for r in runtime)
            ]
            for name in files:
                path = Path(top) / name
                if path.is_file() and not path.is_symlink() and path.stat().st_size > 0:
                    digests.setdefault(name, []).append(
                        hashlib.sha256(path.read_bytes()).hexdigest()
                    )
    assert len(digests) > 20
    w = spawn()
    hits, seen = w.value(
        f"""
        import hashlib, os
        digests = {digests!r}
        result, seen = [], 0
        for root, dirs, files in os.walk("/"):
            if root in ("/proc", "/sys"):
                dirs[:] = []
                continue
            seen += len(files)
            for name in files:
                if name in digests:
                    try:
                        data = open(os.path.join(root, name), "rb").read()
                    except OSError:
                        continue
                    if hashlib.sha256(data).hexdigest() in digests[name]:
                        result.append(os.path.join(root, name))
        result = (result, seen)
    """,
        timeout=120,
    )
    assert seen > 1000  # the walk did see the system
    assert hits == []


# --------------------------------------------------------------------------- 1. forging the verdict


@needs_isolation
def test_the_results_folder_cannot_be_written_now_or_later(spawn, tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    target = results / "results.json"
    target.write_text('{"score": 0}')
    w = spawn(hide=[results])
    reply = w.ask(f"open({str(target)!r}, 'w').write('{{\"score\": 100}}')")
    assert not reply["ok"]
    # a detached process that tries again after the worker is gone
    w.ask(
        textwrap.dedent(f"""
        import os, time
        if os.fork() == 0:
            os.setsid()
            time.sleep(0.5)
            try:
                os.makedirs({str(results)!r}, exist_ok=True)
                open({str(target)!r}, 'w').write('{{"score": 100}}')
            finally:
                os._exit(0)
    """)
    )
    # the parent's command line (where --results is) is not visible: only the worker's processes are
    seen = w.value(
        "import os; result = {open(f'/proc/{p}/status').read().split('Uid:')[1].split()[0] for p in os.listdir('/proc') if p.isdigit()}"
    )
    assert seen == {str(w.proc.uid)}
    w.send("import os; os._exit(0)")
    assert w.proc.wait(5) == 0
    time.sleep(1.0)
    assert target.read_text() == '{"score": 0}'
    assert uids.pids_of_uid(w.proc.uid) == []  # the detached writer died with the worker


# --------------------------------------------------------------------------- /tmp, network


@needs_isolation
def test_tmp_and_dev_shm_are_private(spawn):
    marker = Path("/tmp") / f"seqgrade-host-{uuid.uuid4().hex}"
    marker.write_text("host")
    try:
        w = spawn()
        listing = w.value("import os; result = os.listdir('/tmp') + os.listdir('/dev/shm')")
        assert marker.name not in listing
        # only the way to what the worker needs: its own scratch, the interpreter, its venv, numpy
        needed = [w.proc.scratch, *python_paths()]
        ways = {
            p.relative_to(top).parts[0]
            for p in needed
            for top in (Path("/tmp"), Path("/dev/shm"))
            if p.is_relative_to(top) and p != top
        }
        assert set(listing) <= ways, (listing, ways)
        name = f"seqgrade-worker-{uuid.uuid4().hex}"
        w.ask(f"open('/tmp/{name}', 'w').write('x'); open('/dev/shm/{name}', 'w').write('x')")
        assert not (Path("/tmp") / name).exists() and not (Path("/dev/shm") / name).exists()
    finally:
        marker.unlink()


@needs_isolation
def test_no_network_not_even_localhost(spawn):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    accepted: list = []
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            with contextlib.suppress(OSError):
                accepted.append(server.accept())

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    abstract = f"\0seqgrade-test-{uuid.uuid4().hex}"
    unix_server = socket.socket(socket.AF_UNIX)
    unix_server.bind(abstract)
    unix_server.listen()
    try:
        w = spawn()
        port = server.getsockname()[1]
        for code in (
            f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2)",
            "import socket; socket.create_connection(('1.1.1.1', 53), timeout=2)",
            "import socket; socket.getaddrinfo('example.com', 80)",
            f"import socket; s = socket.socket(socket.AF_UNIX); s.connect({abstract!r})",
        ):
            reply = w.ask(code)
            assert not reply["ok"], (code, reply)
        interfaces = w.value("import socket; result = [name for _, name in socket.if_nameindex()]")
        assert interfaces == ["lo"]
    finally:
        stop.set()
        thread.join()
        server.close()
        unix_server.close()
    assert accepted == []


# --------------------------------------------------------------------------- 6. outliving


@needs_isolation
@pytest.mark.parametrize("launcher", [SLEEPER, DAEMON], ids=["setsid-child", "double-fork-daemon"])
def test_detached_children_die_with_the_worker(spawn, launcher):
    token = uuid.uuid4().hex
    w = spawn()
    w.ask(launcher.format(token=token))
    assert wait_until(lambda: processes_with(token) != [])
    w.proc.kill()
    assert wait_until(lambda: processes_with(token) == [], timeout=3)


@needs_isolation
def test_detached_children_die_when_the_worker_exits_on_its_own(spawn):
    token = uuid.uuid4().hex
    w = spawn()
    w.ask(SLEEPER.format(token=token))
    assert wait_until(lambda: processes_with(token) != [])
    w.send("import os; os._exit(0)")
    assert w.proc.wait(5) == 0
    assert wait_until(lambda: processes_with(token) == [], timeout=3)


@pytest.mark.parametrize("mode", ["auto", "off"])
def test_kill_strays_keeps_the_worker_and_stops_what_it_started(spawn, monkeypatch, mode):
    if mode == "auto" and not sandbox.can_isolate():
        pytest.skip("needs root and namespaces")
    monkeypatch.setenv("SEQGRADE_SANDBOX", mode)
    token = uuid.uuid4().hex
    w = spawn()
    spinner = "import subprocess, sys; subprocess.Popen([sys.executable, '-c', 'while True: pass', '{token}'])"
    w.ask(spinner.format(token=token))
    if mode == "auto":  # a setsid'd one too, which only the uid (not the process group) still finds
        w.ask(SLEEPER.format(token=token))
    assert wait_until(lambda: len(processes_with(token)) == (2 if mode == "auto" else 1))
    assert w.proc.kill_strays() >= 1
    assert wait_until(lambda: processes_with(token) == [], timeout=3)
    assert w.value("result = 'still here'") == "still here"


@needs_isolation
def test_between_questions_strays_are_found_in_the_namespace_without_a_host_search(
    spawn, monkeypatch
):
    # every process of the sandbox's pid namespace is below its init: the strays are read from
    # that tree (a daemon reparented to init, a child of a thread), never from a search of every
    # host process; a zombie the worker has not reaped is nothing to stop
    monkeypatch.setenv("SEQGRADE_SANDBOX", "auto")
    token = uuid.uuid4().hex
    w = spawn()
    assert w.proc._init_pid
    w.ask("import os, subprocess, sys; z = subprocess.Popen([sys.executable, '-c', 'pass'])")
    exited = "result = os.waitid(os.P_PID, z.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG) is not None"
    assert wait_until(lambda: w.value(exited))  # a zombie now: exited, not reaped

    def no_search(uid):
        raise AssertionError("searched every host process")

    monkeypatch.setattr(uids, "pids_of_uid", no_search)
    assert w.proc.kill_strays() == 0  # only the zombie is there
    w.ask(DAEMON.format(token=token))
    w.ask(
        "import threading, subprocess, sys\n"
        "t = threading.Thread(target=lambda: subprocess.Popen([sys.executable, '-c', "
        f"'import time; time.sleep(600)', '{token}']))\n"
        "t.start(); t.join()"
    )
    assert wait_until(lambda: len(processes_with(token)) == 2)
    assert w.proc.kill_strays() == 2
    assert wait_until(lambda: processes_with(token) == [], timeout=3)
    assert w.value("result = 'still here'") == "still here"


def test_a_stray_that_takes_several_rounds_to_die_is_counted_once(monkeypatch):
    """The count in "stopped N processes" is of processes, not of the rounds it took to stop
    them (a busy machine lets a killed process linger a few rounds)."""
    from grader.sandbox import process

    rounds = iter([[7, 111, 222], [7, 111, 222], [7, 222]])
    proc = object.__new__(process.SandboxProcess)
    proc._init_pid, proc.uid = 1, None
    monkeypatch.setattr(process.SandboxProcess, "_worker_pid", lambda self: 7)
    monkeypatch.setattr(process, "_live_descendants", lambda root: next(rounds, [7]))
    sent: list[tuple[int, int]] = []
    monkeypatch.setattr(process.os, "kill", lambda pid, sig: sent.append((pid, sig)))
    monkeypatch.setattr(process.time, "sleep", lambda seconds: None)
    assert proc.kill_strays() == 2
    assert {pid for pid, _ in sent} == {111, 222}


# --------------------------------------------------------------------------- 5. exhausting


@needs_isolation
def test_processes_are_limited_and_a_fork_bomb_is_contained(spawn):
    w = spawn(limits=sandbox.Limits(processes=16))
    forks, error = w.value("""
        import os, time
        n, err = 0, None
        try:
            for _ in range(200):
                if os.fork() == 0:
                    time.sleep(600)
                n += 1
        except OSError as exc:
            err = type(exc).__name__
        result = (n, err)
    """)
    assert forks < 16 and error == "BlockingIOError"
    # now a real bomb: every child forks forever; the worker must stay responsive
    w.ask("""
        import os
        if os.fork() == 0:
            os.setsid()
            while True:
                try:
                    os.fork()
                except OSError:
                    pass
    """)
    time.sleep(1.0)
    assert len(uids.pids_of_uid(w.proc.uid)) <= 16
    w.proc.kill()
    assert wait_until(lambda: not uids.pids_of_uid(w.proc.uid), timeout=5)


@needs_isolation
def test_memory_limit_stops_an_allocation_with_a_clear_message(spawn):
    limits = sandbox.Limits(memory_bytes=512 << 20)
    w = spawn(limits=limits)
    reply = w.ask("import numpy as np; x = np.ones(1 << 28)")  # 2 GiB
    assert not reply["ok"] and "MemoryError" in reply["error"]
    reply = w.ask("blocks = []\nwhile True: blocks.append(b'x' * (32 << 20))")
    assert not reply["ok"] and "MemoryError" in reply["error"]
    w.send(
        "import traceback, os\ntry:\n    y = bytearray(1 << 30)\nexcept MemoryError:\n    traceback.print_exc()\n    os._exit(1)"
    )
    assert w.proc.wait(10) == 1
    assert w.proc.exit_description() == "memory limit 512 MiB reached"


@needs_isolation
def test_memory_of_all_processes_together_is_capped_when_a_cgroup_is_available(spawn):
    limits = sandbox.Limits(memory_bytes=384 << 20)
    w = spawn(limits=limits)
    if w.proc._cgroup is None:
        pytest.skip(
            "no writable memory cgroup here: RLIMIT_AS (per process) is the only memory limit"
        )
    statuses = w.value(
        """
        import os, time
        pids = []
        for _ in range(4):
            pid = os.fork()
            if pid == 0:
                block = b"x" * (250 << 20)   # under RLIMIT_AS, together over the cgroup
                time.sleep(3)
                os._exit(0)
            pids.append(pid)
        result = [os.waitpid(p, 0)[1] for p in pids]
    """,
        timeout=30,
    )
    assert any(os.WIFSIGNALED(s) and os.WTERMSIG(s) == signal.SIGKILL for s in statuses)
    assert w.proc.memory_limit_reached()
    assert w.proc.exit_description() == "still running"


@needs_isolation
def test_torch_imports_under_the_default_memory_limit(spawn):
    w = spawn()
    assert w.value("import torch; result = float(torch.ones(3, 4).sum())", timeout=120) == 12.0


def test_huge_files_are_stopped(spawn):
    w = spawn(limits=sandbox.Limits(file_bytes=1 << 20))
    reply = w.ask("open('big', 'wb').write(b'x' * (4 << 20))")
    assert not reply["ok"] and "File too large" in reply["error"]
    assert w.value("import os; result = os.path.getsize('big')") <= 1 << 20


@needs_isolation
def test_many_files_in_tmp_fill_only_its_small_tmpfs(spawn):
    w = spawn(limits=sandbox.Limits(file_bytes=1 << 20))
    reply = w.ask("for i in range(100): open(f'/tmp/f{i}', 'wb').write(b'x' * (1 << 20))")
    assert not reply["ok"] and "No space left" in reply["error"]


def test_tens_of_megabytes_of_prints_are_truncated_without_blocking(spawn):
    w = spawn()
    started = time.monotonic()
    reply = w.ask(
        "import sys\nfor _ in range(50): sys.stdout.write('x' * (1 << 20))\nsys.stdout.flush()\nresult = 'done'",
        timeout=30,
    )
    assert reply == {"ok": True, "result": "'done'"}
    assert time.monotonic() - started < 20
    w.proc.kill()
    out = w.proc.output()
    assert len(out) < sandbox.Limits().output_bytes + 200
    assert out.startswith("xxxx") and "MB more output dropped]" in out
    assert "[… 52.4 MB more output dropped]" in out  # 50 MiB - 64 KiB, in decimal MB


# --------------------------------------------------------------------------- 4. leaving, 3. hanging


@pytest.mark.parametrize(
    ("code", "words"),
    [
        ("import ctypes; ctypes.string_at(0)", "killed by signal SIGSEGV (segmentation fault)"),
        (
            "import os, signal; os.kill(os.getpid(), signal.SIGKILL)",
            "killed by signal SIGKILL (killed)",
        ),
        (
            "import os, signal; os.kill(os.getpid(), signal.SIGTERM)",
            "killed by signal SIGTERM (terminated)",
        ),
        ("import os; os._exit(3)", "exited with status 3"),
    ],
    ids=["segfault", "sigkill", "sigterm", "os-exit"],
)
def test_ways_of_leaving_are_described_in_plain_words(spawn, code, words):
    w = spawn()
    w.send(code)
    with pytest.raises(EOFError):
        w.proc.readline(10)
    assert w.proc.wait(5) is not None
    assert w.proc.exit_description() == words


def test_blocking_on_input_ends_at_once(spawn):
    w = spawn()
    reply = w.ask(
        "input()", timeout=5
    )  # the worker's fd 0 is /dev/null, student input() sees end of file
    assert not reply["ok"] and "EOFError" in reply["error"]
    reply = w.ask("import sys; sys.stdin.read()", timeout=5)
    assert reply["ok"]


@pytest.mark.parametrize(
    "code", ["while True: pass", "import time; time.sleep(600)"], ids=["loop", "sleep"]
)
def test_a_hang_is_cut_by_the_callers_timeout(spawn, code):
    w = spawn()
    w.send(code)
    with pytest.raises(TimeoutError):
        w.proc.readline(1.0)
    started = time.monotonic()
    w.proc.kill(reason="stopped after 1 s")
    assert time.monotonic() - started < 3
    assert w.proc.exit_description() == "stopped after 1 s"


def test_the_sandbox_stops_a_worker_at_the_submission_time_limit(spawn):
    w = spawn(limits=sandbox.Limits(submission_seconds=1.5))
    w.send("import time; time.sleep(600)")
    assert w.proc.wait(10) is not None
    assert w.proc.exit_description() == "stopped after 1.5 s (the time limit for a submission)"


# --------------------------------------------------------------------------- privileges


@needs_isolation
def test_the_worker_has_no_privileges(spawn):
    w = spawn()
    status = w.value("result = open('/proc/self/status').read()")
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    assert fields["Uid"].split()[0] == str(w.proc.uid) != "0"
    assert fields["CapEff"].strip() == "0000000000000000"
    assert fields["NoNewPrivs"].strip() == "1"
    assert fields["Groups"].strip() == ""
    reply = w.ask("import os; os.setuid(0)")
    assert not reply["ok"] and "PermissionError" in reply["error"]


# --------------------------------------------------------------------------- fallbacks


def test_off_mode_is_not_isolated_and_says_so(spawn, monkeypatch):
    monkeypatch.setenv("SEQGRADE_SANDBOX", "off")
    token = uuid.uuid4().hex
    w = spawn()
    assert not w.proc.isolated
    assert w.proc.warning.startswith("this run was not isolated: SEQGRADE_SANDBOX=off")
    assert w.value("result = 6 * 7") == 42
    # the best effort: the worker's process group dies with it
    w.ask(
        f"import subprocess, sys; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)', '{token}'])"
    )
    assert wait_until(lambda: processes_with(token) != [])
    w.proc.kill()
    assert wait_until(lambda: processes_with(token) == [], timeout=3)
    assert not sandbox.can_isolate()


def test_perms_mode_runs_unprivileged_or_says_why_not(spawn, monkeypatch):
    monkeypatch.setenv("SEQGRADE_SANDBOX", "perms")
    if os.geteuid() != 0:
        pytest.skip("perms mode needs root")
    w = spawn()
    assert not w.proc.isolated and w.proc.warning.startswith(
        "this run was not isolated: SEQGRADE_SANDBOX=perms"
    )
    uid = w.value("import os; result = os.getuid()")
    if uid == 0:  # the interpreter is not reachable by other users here (under /root, say)
        assert w.proc.mode == "plain" and "not reachable by an unprivileged user" in w.proc.warning
    else:
        assert w.proc.mode == "perms" and uid == w.proc.uid


PERMS_SCRIPT = textwrap.dedent("""
    import json, os, sys, time, uuid
    sys.path.insert(0, sys.argv[1])
    from grader import sandbox
    from grader.course import content
    os.environ["SEQGRADE_SANDBOX"] = "perms"
    proc = sandbox.spawn(sys.argv[2], {"student.py": b"x = 1\\n"}, hide=content.grader_trees())
    def ask(code):
        proc.stdin.write(json.dumps({"code": code}).encode() + b"\\n"); proc.stdin.flush()
        return json.loads(proc.readline(20))
    token = uuid.uuid4().hex
    out = {"mode": proc.mode, "warning": proc.warning, "uid": proc.uid}
    out["checkout_hidden"] = sandbox.modes.unreachable_for_others(sys.argv[1]) is not None
    out["getuid"] = ask("import os; result = os.getuid()")["result"]
    out["grader"] = ask(f"result = len(open({os.path.join(sys.argv[1], 'grader', '__init__.py')!r}).read())")
    out["scratch_listing"] = ask(f"import os; result = os.listdir({str(proc.scratch.parent)!r})")
    ask(f"import subprocess, sys; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)', '{token}'], start_new_session=True)")
    time.sleep(0.5)
    def alive():
        found = []
        for p in os.listdir("/proc"):
            try:
                if p.isdigit() and token.encode() in open(f"/proc/{p}/cmdline", "rb").read():
                    found.append(p)
            except OSError:
                pass
        return found
    out["before"] = len(alive())
    proc.kill()
    time.sleep(0.3)
    out["after"] = len(alive())
    print(json.dumps(out))
""")


def ways_to_runtime(folder: Path) -> set[str]:
    """The names in `folder` that lead to what the worker's Python needs (a venv inside the
    checkout: its `.venv`)."""
    return {
        p.relative_to(folder).parts[0]
        for p in sandbox_runtime.runtime_paths()
        if p.is_relative_to(folder) and p != folder
    }


def python_paths() -> list[Path]:
    """What running this interpreter reads, as typed and as resolved: a venv's `python` is a
    link to its base interpreter, which may sit elsewhere (under /root, or another 0700 folder)."""
    import numpy

    found = [Path(sys.executable), Path(sys.prefix), Path(sys.base_prefix), Path(numpy.__file__)]
    return [q for p in found for q in {Path(os.path.abspath(p)), Path(os.path.realpath(p))}]


def blocked_folders(paths: list[Path]) -> dict[Path, set[str]]:
    """Each folder on the way to `paths` that others cannot search, with the names under it
    that lead to one of them."""
    out: dict[Path, set[str]] = {}
    for path in paths:
        for folder in reversed(path.parents):
            if os.path.isdir(folder) and not os.stat(folder).st_mode & 0o001:
                out.setdefault(folder, set()).add(path.relative_to(folder).parts[0])
    return out


def run_where_python_is_reachable(
    tmp_path: Path,
    script: Path,
    worker: Path,
    *,
    as_uid: int | None = None,
    extra: tuple[str, ...] | list[str] = (),
) -> dict:
    """Run `script` as root (or `as_uid`) in a mount namespace where other users can reach Python.

    Stands in for a container whose interpreter is world-readable. Every folder others cannot
    search on the way to the interpreter, its venv, its base installation or numpy (a home at
    mode 700, a `mktemp -d` folder) is covered by a searchable tmpfs that holds only the way on;
    a checkout that the covering hides is bound where the script can import it (for root, under
    `tmp_path`, itself out of others' reach; for `as_uid`, on this namespace's /dev/shm). The
    sandbox inside does not get namespaces of its own from this.
    """
    covered = blocked_folders(python_paths())
    repo = REPO
    setup = ""
    hidden_repo = any(
        REPO.is_relative_to(b) and REPO.relative_to(b).parts[0] not in keep
        for b, keep in covered.items()
    )
    if as_uid is not None:  # the scripts and the checkout move to a fresh tmpfs on /dev/shm
        setup += "mount -t tmpfs -o mode=1777 tmpfs /dev/shm && "
        setup += f"cp {script} {worker} /dev/shm/ && chmod 644 /dev/shm/*.py && "
        if hidden_repo or modes.unreachable_for_others(REPO) is not None:
            repo = Path("/dev/shm/checkout")
            setup += f"mkdir {repo} && mount --bind {REPO} {repo} && "
    elif hidden_repo:
        repo = tmp_path / "checkout"
        repo.mkdir()
        setup += f"mount --bind {REPO} {repo} && "
    for n, (folder, keep) in enumerate(sorted(covered.items())):  # outermost first
        stages = []
        for i, name in enumerate(sorted(keep)):
            stage = tmp_path / f"stage-{n}-{i}"
            stage.mkdir()
            setup += f"mount --bind {folder / name} {stage} && "
            stages.append((stage, folder / name))
        setup += f"mount -t tmpfs -o mode=755 tmpfs {folder} && "
        for stage, target in stages:
            make = "mkdir -p" if target.is_dir() else "touch"
            setup += f"{make} {target} && mount --move {stage} {target} && "
    run = " ".join([sys.executable, str(script), str(repo), str(worker), *extra])
    if as_uid is not None:
        run = (
            f"setpriv --reuid={as_uid} --regid={as_uid} --clear-groups "
            f"{sys.executable} /dev/shm/{script.name} {repo} /dev/shm/{worker.name}"
        )
    done = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", f"{setup}exec {run}"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd="/",
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


needs_unshare = pytest.mark.skipif(
    shutil.which("unshare") is None or shutil.which("setpriv") is None,
    reason="needs util-linux unshare and setpriv",
)


@needs_isolation
@needs_unshare
def test_perms_mode_in_a_container_like_root_without_namespaces(tmp_path, worker_program):
    """Gradescope-like: root, a reachable interpreter, no namespaces for us (SEQGRADE_SANDBOX=perms)."""
    script = tmp_path / "perms.py"
    script.write_text(PERMS_SCRIPT)
    out = run_where_python_is_reachable(tmp_path, script, worker_program)
    assert out["mode"] == "perms" and out["getuid"] == str(out["uid"]) and out["uid"] != 0
    if not out["checkout_hidden"]:  # a world-readable checkout: the setup must fix that
        assert "readable by the worker" in out["warning"]
        assert out["grader"]["ok"]  # ... and indeed it is readable in this mode
    else:  # a clone inside a 0700 folder (mktemp -d): permissions hide it
        assert not out["grader"]["ok"] and "PermissionError" in out["grader"]["error"]
    assert (
        "PermissionError" in out["scratch_listing"]["error"]
    )  # other sandboxes' folders are not listable
    assert (
        out["before"] == 1 and out["after"] == 0
    )  # the setsid'd child died with the worker (uid sweep)


NOT_ROOT_SCRIPT = textwrap.dedent("""
    import json, os, sys, time
    sys.path.insert(0, sys.argv[1])
    from grader import sandbox
    proc = sandbox.spawn(sys.argv[2], {"student.py": b"x = 1\\n"}, limits=sandbox.Limits(file_bytes=1 << 20))
    def ask(code):
        proc.stdin.write(json.dumps({"code": code}).encode() + b"\\n"); proc.stdin.flush()
        return json.loads(proc.readline(20))
    out = {"mode": proc.mode, "isolated": proc.isolated, "warning": proc.warning, "can_isolate": sandbox.can_isolate()}
    out["uid"] = ask("import os; result = os.getuid()")["result"]
    out["numpy"] = ask("import numpy; result = float(numpy.ones(3).sum())")
    out["threads"] = ask("import threading; t = threading.Thread(target=print); t.start(); t.join(); result = 'ok'")
    out["big_file"] = ask("open('big', 'wb').write(b'x' * (4 << 20))")
    proc.kill(reason="done")
    out["description"] = proc.exit_description()
    print(json.dumps(out))
""")


@needs_isolation
@needs_unshare
def test_without_root_the_run_is_limited_and_says_it_is_not_isolated(tmp_path, worker_program):
    script = tmp_path / "not_root.py"
    script.write_text(NOT_ROOT_SCRIPT)
    out = run_where_python_is_reachable(tmp_path, script, worker_program, as_uid=65534)
    assert out["mode"] == "plain" and not out["isolated"] and not out["can_isolate"]
    assert out["warning"].startswith("this run was not isolated: not running as root (uid 65534)")
    assert out["uid"] == "65534"
    assert (
        out["numpy"]["ok"] and out["threads"]["ok"]
    )  # RLIMIT_NPROC counts from what the user already runs
    assert "File too large" in out["big_file"]["error"]
    assert out["description"] == "done"


# --------------------------------------------------------------------------- cost


NUMPY_WORKER = "import os, numpy\nos.write(1, b'ready\\n')\nos.read(0, 1)\n"


@needs_isolation
def test_isolation_costs_well_under_half_a_second(tmp_path, capsys):
    program = tmp_path / "numpy_worker.py"
    program.write_text(NUMPY_WORKER)

    def bare() -> float:
        t = time.perf_counter()
        p = subprocess.Popen(
            [sys.executable, "-I", "-B", str(program)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        p.stdout.readline()
        dt = time.perf_counter() - t
        p.kill()
        p.wait()
        return dt

    def isolated() -> float:
        t = time.perf_counter()
        proc = sandbox.spawn(program, {})
        proc.readline(20)
        dt = time.perf_counter() - t
        proc.kill()
        return dt

    bare_times = [bare() for _ in range(5)]
    isolated_times = [isolated() for _ in range(5)]
    with capsys.disabled():
        print(
            f"\nspawn to numpy imported: bare {statistics.median(bare_times):.3f} s, "
            f"sandboxed {statistics.median(isolated_times):.3f} s (medians of 5)"
        )
    assert min(isolated_times) - min(bare_times) < 0.5


BASE_SITE_SCRIPT = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, sys.argv[1])
    from grader import sandbox
    from grader.sandbox import runtime
    if sys.argv[4] == "control":  # every site directory left as bound
        sys.modules["grader.sandbox.spawn"].unused_site_dirs = lambda: []
    proc = sandbox.spawn(sys.argv[2], {"student.py": b"x = 1\\n"})
    proc.stdin.write(json.dumps({"code": f"import os; result = os.listdir({sys.argv[3]!r})"}).encode() + b"\\n")
    proc.stdin.flush()
    reply = json.loads(proc.readline(20))
    proc.kill()
    print(json.dumps({"mode": proc.mode, "unused": [str(p) for p in runtime.unused_site_dirs()], "reply": reply}))
""")


@needs_isolation
def test_a_venv_without_system_site_packages_does_not_show_the_base_ones(tmp_path, worker_program):
    """A newcomer's `python -m venv` (no --system-site-packages): the base installation's
    site-packages is bound with its prefix but off the import path; whatever was installed
    there (another copy of the grader, say) is covered. The control leaves it showing."""
    import site

    base = [
        p
        for p in site.getsitepackages([sys.base_prefix])
        if os.path.isdir(p) and os.listdir(p) and p.startswith(sys.base_prefix)
    ]
    if not base:
        pytest.skip("the base installation has no site-packages with anything in it")
    venv = tmp_path / "bare-venv"
    subprocess.run(
        [sys.base_prefix + "/bin/python3", "-m", "venv", "--without-pip", str(venv)], check=True
    )
    script = tmp_path / "base_site.py"
    script.write_text(BASE_SITE_SCRIPT)
    out = {}
    for kind in ("covered", "control"):
        done = subprocess.run(
            [
                str(venv / "bin" / "python"),
                str(script),
                str(REPO),
                str(worker_program),
                base[0],
                kind,
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        out[kind] = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["covered"]["mode"] == "namespaces" and base[0] in out["covered"]["unused"]
    assert out["covered"]["reply"] == {"ok": True, "result": "[]"}  # the echo worker's repr
    assert out["control"]["reply"]["ok"] and out["control"]["reply"]["result"] != "[]"
