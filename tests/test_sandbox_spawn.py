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
from conftest import processes_with, python_paths, wait_until, ways_to_runtime

from grader import sandbox
from grader.course import content
from grader.sandbox import runtime as sandbox_runtime
from grader.sandbox import uids

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
def test_a_memory_error_printed_last_is_read_when_the_reader_lags(spawn, monkeypatch):
    """A loaded grader's output reader may not yet have taken the traceback a worker printed
    just before it exited: how it ended is told once the reader has taken what is left."""
    from grader.sandbox import process

    real = process.os.read

    def lagging(fd: int, n: int) -> bytes:
        if threading.current_thread().name.startswith("sandbox-output-"):
            time.sleep(0.2)
        return real(fd, n)

    w = spawn(limits=sandbox.Limits(memory_bytes=512 << 20))
    assert w.ask("1 + 1")["ok"]
    monkeypatch.setattr(process.os, "read", lagging)
    w.send(
        "import traceback, os\ntry:\n    y = bytearray(1 << 30)\nexcept MemoryError:\n"
        "    traceback.print_exc()\n    os._exit(1)"
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
