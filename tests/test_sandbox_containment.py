"""Issue 15 items 4, 6 and 13 at the spawn level: each attack contained, and its control.

Each test plays the attack from inside the suite's echo worker (conftest.ECHO_WORKER) and
asserts the sandbox holds; where it makes sense, the same attack with SEQGRADE_SANDBOX=off (no
sandbox: limits and a process group only) shows the breach is real on this machine.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest
from conftest import processes_with, wait_until

from grader import sandbox
from grader.sandbox import modes, scratch, seccomp, uids

REPO = Path(__file__).resolve().parents[1]
needs_isolation = pytest.mark.skipif(not sandbox.can_isolate(), reason="needs root and namespaces")
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root")
# (return value, errno) of a raw system call, through ctypes: what a student can write.
SYSCALL = textwrap.dedent("""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    def syscall(nr, *args):
        ctypes.set_errno(0)
        ret = libc.syscall(ctypes.c_long(nr), *args)
        return (ret, ctypes.get_errno())
""")
KEY_SPEC_USER_KEYRING = -4
KEYCTL_SEARCH, KEYCTL_READ, KEYCTL_INVALIDATE = 10, 11, 21
NR = {
    name: numbers[0 if os.uname().machine == "x86_64" else 1]
    for name, numbers in seccomp.DENIED.items()
}


# --------------------------------------------------------------------------- item 4: keyring, vsock


def add_key(description: str) -> str:
    return SYSCALL + (
        f"result = syscall({NR['add_key']}, b'user', {description.encode()!r}, "
        f"b'a solution', 10, {KEY_SPEC_USER_KEYRING})"
    )


def find_key(description: str) -> str:
    return SYSCALL + (
        f"result = syscall({NR['keyctl']}, {KEYCTL_SEARCH}, "
        f"{KEY_SPEC_USER_KEYRING}, b'user', {description.encode()!r}, 0)"
    )


@needs_isolation
def test_the_kernel_keyring_is_closed_and_consecutive_submissions_get_different_uids(spawn):
    description = f"seqgrade-test-{uuid.uuid4().hex}"
    first = spawn()
    assert first.value(add_key(description)) == (-1, 1)  # EPERM, not a kill
    assert first.value(find_key(description)) == (-1, 1)
    assert first.value(SYSCALL + f"result = syscall({NR['request_key']}, b'user', b'x', 0, 0)") == (
        -1,
        1,
    )
    reply = first.ask("import os; os.getuid()")
    assert reply["ok"]  # the worker lives on: a denied call is an error, not the end
    first.proc.kill()
    second = spawn()
    assert second.proc.uid != first.proc.uid
    assert second.value(find_key(description)) == (-1, 1)


@needs_root
def test_control_without_the_sandbox_a_key_carries_from_one_submission_to_the_next(
    spawn, monkeypatch
):
    monkeypatch.setenv("SEQGRADE_SANDBOX", "off")
    description = f"seqgrade-test-{uuid.uuid4().hex}"
    first = spawn()
    key, errno = first.value(add_key(description))
    if key < 0:
        pytest.skip(f"no kernel keyring here (errno {errno})")
    try:
        first.proc.kill()
        second = spawn()
        found, _ = second.value(find_key(description))
        assert found == key  # the breach: the next submission reads the first one's key
        data = second.value(
            SYSCALL + f"buf = ctypes.create_string_buffer(64)\n"
            f"n = syscall({NR['keyctl']}, {KEYCTL_READ}, {key}, buf, 64)\n"
            "result = buf.raw[:n[0]]"
        )
        assert data == b"a solution"
    finally:
        import ctypes

        ctypes.CDLL(None).syscall(ctypes.c_long(NR["keyctl"]), KEYCTL_INVALIDATE, key)


@needs_root
def test_uids_rotate_even_from_one_process_and_thread(spawn):
    seen = []
    for _ in range(4):
        w = spawn(limits=sandbox.Limits(submission_seconds=30))
        seen.append(w.proc.uid)
        w.proc.kill()
    if seen[0] is None:
        pytest.skip("no dedicated uid here (plain mode)")
    assert len(set(seen)) == len(seen), seen


VSOCK = "import socket; s = socket.socket(40, socket.SOCK_STREAM); s.close(); result = 'made'"


@needs_isolation
def test_a_vsock_socket_cannot_be_made(spawn):
    reply = spawn().ask(VSOCK)
    assert not reply["ok"] and "PermissionError" in reply["error"]


@needs_root
def test_control_without_the_sandbox_a_vsock_socket_can_be_made(spawn, monkeypatch):
    monkeypatch.setenv("SEQGRADE_SANDBOX", "off")
    reply = spawn().ask(VSOCK)
    if not reply["ok"] and "Address family not supported" in reply["error"]:
        pytest.skip("no AF_VSOCK in this kernel")
    assert reply == {"ok": True, "result": "'made'"}


OTHER_CALLS = SYSCALL + textwrap.dedent("""
    import os
    buf = ctypes.create_string_buffer(8)
    iov = (ctypes.c_void_p * 2)(ctypes.addressof(buf), 8)
    result = {
        "process_vm_readv": syscall(NR["process_vm_readv"], os.getpid(), iov, 1, iov, 1, 0),
        "io_uring_setup": syscall(NR["io_uring_setup"], 1, None),
        "userfaultfd": syscall(NR["userfaultfd"], 0),
        "unshare": syscall(NR["unshare"], 0x10000000),
        "bpf": syscall(NR["bpf"], 0, None, 0),
        "ptrace": syscall(NR["ptrace"], 16, 0x3FFFFFF0, 0, 0),  # PTRACE_ATTACH to no process
        "clone3": syscall(435, None, 0),
        "shmget": syscall(NR["shmget"], 0, 4096, 0o1600),  # IPC_PRIVATE, IPC_CREAT | 0600
        "mq_open": syscall(NR["mq_open"], b"seqgrade-test", 0o100 | 2, 0o600, None),
    }
""")


@needs_isolation
def test_other_calls_a_worker_never_needs_fail_with_eperm(spawn):
    w = spawn()
    got = w.value(f"NR = {NR!r}\n" + OTHER_CALLS)
    assert got.pop("clone3") == (-1, 38)  # ENOSYS: the C library falls back to clone
    assert got == dict.fromkeys(got, (-1, 1)), got
    # and what a worker does need still works: threads, a child process, numpy
    assert w.value("""
        import subprocess, sys, threading, numpy
        t = threading.Thread(target=lambda: None); t.start(); t.join()
        out = subprocess.run([sys.executable, '-c', 'print(6 * 7)'], capture_output=True, text=True)
        result = (out.stdout.strip(), float(numpy.arange(4).sum()))
    """) == ("42", 6.0)


@needs_root
def test_control_without_the_sandbox_those_calls_reach_the_kernel(spawn, monkeypatch):
    monkeypatch.setenv("SEQGRADE_SANDBOX", "off")
    code = OTHER_CALLS
    for name in ("unshare", "shmget", "mq_open"):  # these would change or leave host state
        code = code.replace(f'"{name}": ', f'# "{name}": ')
    got = spawn().value(f"NR = {NR!r}\n" + code)
    assert got["process_vm_readv"][0] == 8  # read its own memory: the call is there
    assert got["io_uring_setup"][1] != 1 and got["clone3"][1] != 38


# --------------------------------------------------------------------------- item 6: dies with its grader


GRADER_SCRIPT = textwrap.dedent('''
    import json, os, sys, time
    sys.path.insert(0, sys.argv[1])
    from grader import sandbox
    limits = sandbox.Limits(submission_seconds=float(sys.argv[3]))
    proc = sandbox.spawn(sys.argv[2], {"student.py": b"x = 1\\n"}, limits=limits)
    code = """
    import subprocess, sys, threading, time
    def write():
        while True:
            with open('log', 'a') as f:
                f.write('x')
            time.sleep(0.02)
    threading.Thread(target=write).start()  # not a daemon: it would keep the worker alive
    subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)', '%s'], start_new_session=True)
    """ % os.environ["SEQGRADE_TEST_TOKEN"]
    proc.stdin.write(json.dumps({"code": code}).encode() + b"\\n")
    proc.stdin.flush()
    proc.readline(20)
    print(json.dumps({"uid": proc.uid, "mode": proc.mode, "pid": proc.pid,
                      "base": str(proc.scratch.parent)}), flush=True)
    time.sleep(600)
''')


def start_grader(tmp_path: Path, worker: Path, token: str, seconds: float, mode: str):
    script = tmp_path / "grader_child.py"
    script.write_text(GRADER_SCRIPT)
    env = {**os.environ, "SEQGRADE_SANDBOX": mode, "SEQGRADE_TEST_TOKEN": token}
    child = subprocess.Popen(
        [sys.executable, str(script), str(REPO), str(worker), str(seconds)],
        stdout=subprocess.PIPE,
        env=env,
        cwd=tmp_path,
    )
    info = json.loads(child.stdout.readline())
    assert wait_until(lambda: processes_with(token) != [])
    log = Path(info["base"]) / "scratch" / "log"
    assert wait_until(log.exists)
    return child, info, log


def still_writing(log: Path) -> bool:
    """The log grows (a folder swept meanwhile by another grader's start counts as not growing)."""

    def size() -> int:
        return log.stat().st_size if log.exists() else -1

    before = size()
    time.sleep(0.5)
    return size() not in (before, -1)


def sandbox_gone(info: dict, token: str) -> bool:
    return processes_with(token) == [] and (
        info["uid"] is None or uids.pids_of_uid(info["uid"]) == []
    )


TEARDOWN_SECONDS = 30.0  # how long a sandbox may take to die with its grader


def clean_up(child: subprocess.Popen, info: dict, token: str) -> None:
    """Whatever the test found, nothing of its sandbox is left for the tests after it."""
    with contextlib.suppress(OSError):
        os.kill(child.pid, signal.SIGKILL)
    child.wait()
    for pid in processes_with(token):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    if info["uid"] is not None and not sandbox_gone(info, token):
        uids.kill_uid(info["uid"])
    with contextlib.suppress(OSError):  # plain mode: the worker, if it is still ours
        if b"echo_worker.py" in Path(f"/proc/{info['pid']}/cmdline").read_bytes():
            os.killpg(info["pid"], signal.SIGKILL)
    shutil.rmtree(info["base"], ignore_errors=True)


@needs_isolation
def test_the_sandbox_dies_with_its_grader_and_the_next_start_sweeps_what_is_left(
    tmp_path, worker_program
):
    token = uuid.uuid4().hex
    child, info, log = start_grader(tmp_path, worker_program, token, 60, "auto")
    try:
        assert info["mode"] == "namespaces"
        os.kill(child.pid, signal.SIGKILL)  # the grader is OOM-killed, say
        child.wait()
        killed = time.monotonic()
        # Gone long before the sandbox's own deadline (60 s + 5): the chain of parent-death
        # signals, however loaded the machine (usually within 0.1 s; a loaded one, seconds).
        assert wait_until(lambda: sandbox_gone(info, token), timeout=TEARDOWN_SECONDS)
        print(f"the sandbox was gone {time.monotonic() - killed:.2f} s after its grader")
        assert not still_writing(log)
        swept = scratch.sweep_stale()  # what the next spawn does first (anyone's, on this host)
        assert Path(info["base"]) in swept or not Path(info["base"]).exists()
        assert not Path(info["base"]).exists()
    finally:
        clean_up(child, info, token)


@pytest.mark.slow  # waits out the deadline (8 s)
@needs_isolation
def test_the_sandbox_keeps_its_own_deadline_when_the_grader_is_stuck(tmp_path, worker_program):
    token = uuid.uuid4().hex
    child, info, log = start_grader(tmp_path, worker_program, token, 3, "auto")
    try:
        os.kill(child.pid, signal.SIGSTOP)  # stuck in C code: its watchdog thread never runs
        started = time.monotonic()
        assert not sandbox_gone(info, token)
        assert wait_until(lambda: sandbox_gone(info, token), timeout=20)
        assert 3 <= time.monotonic() - started < 3 + 5 + 5  # its deadline: 3 s + 5 s of margin
        assert not still_writing(log)
    finally:
        clean_up(child, info, token)


@needs_root
def test_control_without_the_sandbox_the_worker_outlives_its_grader(tmp_path, worker_program):
    token = uuid.uuid4().hex
    child, info, log = start_grader(tmp_path, worker_program, token, 60, "off")
    try:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        time.sleep(1.0)
        # the breach: the worker outlives its grader, still writing (unless a sandbox started
        # meanwhile by another test process swept its dead grader's folder)
        assert processes_with(token) != [] and (still_writing(log) or not log.exists())
    finally:
        clean_up(child, info, token)


# --------------------------------------------------------------------------- item 13: modes never break grading


@needs_root
def test_perms_mode_falls_back_to_plain_with_the_reason_when_the_uid_cannot_reach_its_files(
    spawn, monkeypatch, tmp_path
):
    """As root, with the worker's folder (or the interpreter) under a 0700 directory."""
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    monkeypatch.setattr("tempfile.tempdir", str(private))
    monkeypatch.setenv("SEQGRADE_SANDBOX", "perms")
    w = spawn()
    assert w.proc.mode == "plain" and w.proc.uid is None
    assert "the unprivileged uid could not be used" in w.proc.warning
    assert "is not reachable by an unprivileged user" in w.proc.warning
    blocked = modes.unreachable_for_others(Path(sys.executable)) or private
    assert f"{blocked} is not searchable" in w.proc.warning
    assert w.value("result = 6 * 7") == 42  # graded, not a BrokenPipeError


@needs_isolation
def test_namespaces_mode_works_with_everything_under_a_0700_directory(spawn, monkeypatch, tmp_path):
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    monkeypatch.setattr("tempfile.tempdir", str(private))
    w = spawn()
    assert w.proc.mode == "namespaces" and w.value("result = 6 * 7") == 42


@needs_isolation
def test_a_hidden_single_file_is_out_of_reach_in_namespaces_mode(spawn, tmp_path):
    """hide= takes files: the container's submission_metadata.json is not there for the worker."""
    folder = tmp_path / "autograder"
    folder.mkdir()
    metadata = folder / "submission_metadata.json"
    metadata.write_text('{"users": [{"email": "someone@example.edu"}]}')
    metadata.chmod(0o644)
    reply = spawn(hide=[metadata]).ask(f"result = open({str(metadata)!r}).read()")
    assert not reply["ok"] and "FileNotFoundError" in reply["error"]


PERMS_HIDE_SCRIPT = textwrap.dedent("""
    import json, os, sys
    sys.path.insert(0, sys.argv[1])
    from pathlib import Path
    from grader import sandbox
    os.environ["SEQGRADE_SANDBOX"] = "perms"
    folder = Path(sys.argv[3])
    metadata, other = folder / "submission_metadata.json", folder / "other.json"
    for path in (metadata, other):
        path.write_text('{"users": []}')
        path.chmod(0o644)
    folder.chmod(0o755)
    proc = sandbox.spawn(sys.argv[2], {"student.py": b"x = 1\\n"}, hide=[metadata])
    def ask(code):
        proc.stdin.write(json.dumps({"code": code}).encode() + b"\\n"); proc.stdin.flush()
        return json.loads(proc.readline(20))
    out = {"mode": proc.mode, "metadata": ask(f"open({str(metadata)!r}).read()"),
           "other": ask(f"result = open({str(other)!r}).read()"),
           "root_reads": metadata.read_text()}
    proc.kill()
    print(json.dumps(out))
""")


@needs_isolation
@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs util-linux unshare")
def test_perms_mode_makes_a_hidden_single_file_unreadable_to_the_worker(tmp_path, worker_program):
    """Gradescope-like (perms mode, Python reachable): submission_metadata.json in hide=."""
    from test_sandbox_fallbacks import run_where_python_is_reachable

    script = tmp_path / "perms_hide.py"
    script.write_text(PERMS_HIDE_SCRIPT)
    folder = Path("/dev/shm") / f"seqgrade-test-{uuid.uuid4().hex}"
    folder.mkdir()
    try:
        out = run_where_python_is_reachable(tmp_path, script, worker_program, extra=[str(folder)])
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    assert out["mode"] == "perms"
    assert "PermissionError" in out["metadata"]["error"]
    assert out["other"]["ok"]  # the control: a file not in hide= stays readable in this mode
    assert out["root_reads"] == '{"users": []}'


def test_stale_scratch_folders_are_swept_and_live_ones_kept(tmp_path, monkeypatch):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    live = scratch.ScratchBase()
    dead = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, tempfile; sys.path.insert(0, sys.argv[1]); "
            "tempfile.tempdir = sys.argv[2]; from grader.sandbox import scratch; "
            "print(scratch.ScratchBase().path)",
            str(REPO),
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()  # its grader exits: stale
    (tmp_path / "seqgrade-sandbox-being-made").mkdir()  # no lock file yet: left alone
    try:
        assert scratch.sweep_stale(tmp_path) == [Path(dead)]
        assert live.scratch.is_dir() and (tmp_path / "seqgrade-sandbox-being-made").is_dir()
    finally:
        live.remove()


PERMS_DEATH_SCRIPT = textwrap.dedent("""
    import fcntl, json, os, signal, subprocess, sys, threading, time
    sys.path.insert(0, sys.argv[1])
    from grader.sandbox import uids
    env = {**os.environ, "SEQGRADE_SANDBOX": "perms", "SEQGRADE_TEST_TOKEN": sys.argv[4]}
    child = subprocess.Popen([sys.executable, sys.argv[3], sys.argv[1], sys.argv[2], "60"],
                             stdout=subprocess.PIPE, env=env)
    info = json.loads(child.stdout.readline())
    time.sleep(0.5)
    out = {"mode": info["mode"], "before": sorted(uids.pids_of_uid(info["uid"]))}
    # Other graders on this host (the suite's other workers) sweep at every start: this script
    # takes the uid's lease the moment the grader's lock dies, so that only its own sweep runs.
    lease = os.open(uids.lease_folder() / f"{info['uid']}.lock", os.O_RDWR)
    taken = threading.Thread(target=fcntl.flock, args=(lease, fcntl.LOCK_EX))
    taken.start()
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    taken.join(5)
    time.sleep(1.0)
    out["left"] = sorted(uids.pids_of_uid(info["uid"]))
    out["worker"] = info["pid"]
    os.close(lease)
    out["swept"] = info["uid"] in uids.sweep_stale_uids()
    out["after"] = uids.pids_of_uid(info["uid"])
    print(json.dumps(out))
""")


@needs_isolation
@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs util-linux unshare")
def test_perms_mode_worker_dies_with_its_grader_and_the_next_start_sweeps_its_uid(
    tmp_path, worker_program
):
    """Gradescope-like perms mode: the worker has a parent-death signal; what it setsid'd lives
    on under its uid until the next start sweeps the uids no live grader holds."""
    from test_sandbox_fallbacks import run_where_python_is_reachable

    script = tmp_path / "perms_death.py"
    script.write_text(PERMS_DEATH_SCRIPT)
    grader_script = tmp_path / "grader_child.py"
    grader_script.write_text(GRADER_SCRIPT)
    out = run_where_python_is_reachable(
        tmp_path, script, worker_program, extra=[str(grader_script), uuid.uuid4().hex]
    )
    assert out["mode"] == "perms" and out["worker"] in out["before"] and len(out["before"]) == 2
    assert out["worker"] not in out["left"]  # the worker died with its grader
    assert len(out["left"]) == 1 and out["swept"] and out["after"] == []


@needs_root
def test_an_honest_solution_keeps_full_marks_when_perms_mode_cannot_be_used(
    submit, monkeypatch, tmp_path
):
    """Issue 15 item 13 end to end: the engine grades through the fallback, with its reason."""
    import toy_assignment as toy

    from grader.engine.grade import grade_submission

    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    monkeypatch.setattr("tempfile.tempdir", str(private))
    monkeypatch.setenv("SEQGRADE_SANDBOX", "perms")
    report = grade_submission(
        submit({"toy.py": toy.NUMPY_SOLUTION}),
        toy.ASSIGNMENT,
        limits=sandbox.Limits(call_seconds=10.0, submission_seconds=60.0),
    )
    assert report.score == report.max_score > 0
    assert not report.isolated
    assert any("the unprivileged uid could not be used" in w for w in report.warnings), (
        report.warnings
    )


PERMS_PRIVATE_TMP_SCRIPT = textwrap.dedent("""
    import json, os, sys, tempfile
    sys.path.insert(0, sys.argv[1])
    from grader import sandbox
    os.environ["SEQGRADE_SANDBOX"] = "perms"
    tempfile.tempdir = sys.argv[3]  # a 0700 folder: the worker's uid cannot reach its scratch
    proc = sandbox.spawn(sys.argv[2], {"student.py": b"x = 1\\n"})
    proc.stdin.write(json.dumps({"code": "result = 6 * 7"}).encode() + b"\\n")
    proc.stdin.flush()
    out = {"mode": proc.mode, "warning": proc.warning, "reply": json.loads(proc.readline(20))}
    proc.kill()
    print(json.dumps(out))
""")


@needs_isolation
@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs util-linux unshare")
def test_perms_mode_with_a_reachable_interpreter_and_a_private_tmpdir_falls_back(
    tmp_path, worker_program
):
    """The exec succeeds but the uid cannot enter its scratch folder: a fallback, no broken pipe."""
    from test_sandbox_fallbacks import run_where_python_is_reachable

    script = tmp_path / "perms_private_tmp.py"
    script.write_text(PERMS_PRIVATE_TMP_SCRIPT)
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    out = run_where_python_is_reachable(tmp_path, script, worker_program, extra=[str(private)])
    assert out["mode"] == "plain" and out["reply"] == {"ok": True, "result": "42"}
    assert "is not reachable by an unprivileged user (uid" in out["warning"]
    assert str(private) in out["warning"]


PERMS_LEFTOVERS_SCRIPT = textwrap.dedent("""
    import json, os, sys
    sys.path.insert(0, sys.argv[1])
    from grader import sandbox
    os.environ["SEQGRADE_SANDBOX"] = sys.argv[4]
    names = [f"/tmp/{sys.argv[3]}", f"/dev/shm/{sys.argv[3]}"]
    proc = sandbox.spawn(sys.argv[2], {"student.py": b"x = 1\\n"})
    code = f"for n in {names!r}:\\n    open(n, 'w').write('my answers')\\n    __import__('os').chmod(n, 0o644)"
    proc.stdin.write(json.dumps({"code": code}).encode() + b"\\n")
    proc.stdin.flush()
    out = {"mode": proc.mode, "reply": json.loads(proc.readline(20))}
    proc.kill()
    out["left"] = [n for n in names if os.path.exists(n)]
    for n in out["left"]:
        os.unlink(n)
    print(json.dumps(out))
""")


@needs_isolation
@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs util-linux unshare")
@pytest.mark.parametrize("mode", ["perms", "off"])
def test_perms_mode_leaves_nothing_in_the_hosts_shared_folders(tmp_path, worker_program, mode):
    """A file left world-readable in /tmp or /dev/shm would reach the next submissions (any uid).
    With SEQGRADE_SANDBOX=off (the control) the files stay."""
    from test_sandbox_fallbacks import run_where_python_is_reachable

    script = tmp_path / "perms_leftovers.py"
    script.write_text(PERMS_LEFTOVERS_SCRIPT)
    name = f"seqgrade-test-{uuid.uuid4().hex}"
    out = run_where_python_is_reachable(tmp_path, script, worker_program, extra=[name, mode])
    assert out["reply"]["ok"], out
    if mode == "perms":
        assert out["mode"] == "perms" and out["left"] == []
    else:
        assert out["mode"] == "plain" and len(out["left"]) == 2  # the breach


KEYRING_AS_UID = textwrap.dedent("""
    import ctypes, os, sys
    sys.path.insert(0, sys.argv[1])
    from grader.sandbox import launcher  # before the uid change: the interpreter may sit in /root
    uid, action, description = int(sys.argv[2]), sys.argv[3], sys.argv[4].encode()
    libc = ctypes.CDLL(None, use_errno=True)
    clear = launcher._Libc().clear_keyrings
    os.setgroups([]); os.setgid(uid); os.setuid(uid)
    keyctl, add_key = {"x86_64": (250, 248), "aarch64": (219, 217)}[os.uname().machine]
    if action == "add":
        sys.exit(0 if libc.syscall(ctypes.c_long(add_key), b"user", description, b"v", 1, -4) > 0 else 1)
    if action == "clear":
        clear()
    found = libc.syscall(ctypes.c_long(keyctl), 10, -4, b"user", description, 0) > 0
    sys.exit(0 if found else 3)
""")


@needs_root
def test_the_launcher_empties_the_keyrings_an_earlier_holder_of_the_uid_left(tmp_path):
    """Defence in depth where no seccomp filter exists (another machine): a reused uid starts
    with empty user keyrings. The control: without the clear, the key is still there."""
    script = tmp_path / "keyring.py"
    script.write_text(KEYRING_AS_UID)
    lease = uids.UidLease()
    description = f"seqgrade-test-{uuid.uuid4().hex}"

    def run(action: str) -> int:
        return subprocess.run(
            [sys.executable, str(script), str(REPO), str(lease.uid), action, description], cwd="/"
        ).returncode

    try:
        if run("add") != 0:
            pytest.skip("no kernel keyring here")
        assert run("find") == 0  # the breach: the key outlives the process that made it
        assert run("clear") == 3  # gone once the launcher cleared the uid's keyrings
        assert run("find") == 3
    finally:
        lease.release()


@needs_root
def test_stale_cgroups_are_killed_and_removed_and_live_ones_kept():
    from grader.sandbox import cgroup

    live, stale = uids.UidLease(), uids.UidLease()
    groups = [
        cgroup.MemoryCgroup.create(f"{cgroup.PREFIX}{lease.uid}", 64 << 20)
        for lease in (live, stale)
    ]
    try:
        if None in groups:
            pytest.skip("no writable memory cgroup here")
        stale.release()  # its grader is gone
        removed = cgroup.sweep_stale(lambda uid: bool(uids.unleased({uid})))
        # another grader's start on this host (a parallel test) may have swept it first
        assert not groups[1].path.exists()
        assert groups[0].path.exists() and groups[0].path not in removed
    finally:
        for group in groups:
            if group is not None:
                group.remove()
        live.release()


@pytest.mark.slow  # waits out the deadline (6 s)
@needs_root
@pytest.mark.parametrize("mode", ["auto", "perms"])
def test_the_sandboxs_own_deadline_reads_as_the_submission_time_limit(spawn, monkeypatch, mode):
    """init's alarm (namespaces) or the worker's own (perms, plain): the caller's watchdog is
    switched off here, as when the grader is stuck and its timer thread cannot run."""
    if mode == "auto" and not sandbox.can_isolate():
        pytest.skip("needs root and namespaces")
    monkeypatch.setenv("SEQGRADE_SANDBOX", mode)
    w = spawn(limits=sandbox.Limits(submission_seconds=1))
    w.proc._watchdog.cancel()
    w.ask("import threading, time; threading.Thread(target=time.sleep, args=(600,)).start()")
    assert w.proc.wait(15) is not None
    assert w.proc.exit_description() == "stopped after 1 s (the time limit for a submission)"
