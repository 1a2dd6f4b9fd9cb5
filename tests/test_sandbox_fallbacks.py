"""The sandbox where the machine differs from ours: SEQGRADE_SANDBOX=off and =perms, a
container-like root without namespaces, a user who is not root, a venv without the system's
site packages.

Each runs the tiny echo worker of tests/test_sandbox_spawn.py (conftest's `spawn`) and asserts
what the weaker mode still holds and that it says it is weaker. `run_where_python_is_reachable`
stands in for a container whose interpreter other users can reach (test_sandbox_containment uses
it too).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest
from conftest import processes_with, python_paths, wait_until

from grader import sandbox
from grader.sandbox import modes

needs_isolation = pytest.mark.skipif(not sandbox.can_isolate(), reason="needs root and namespaces")
REPO = Path(__file__).resolve().parents[1]


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
