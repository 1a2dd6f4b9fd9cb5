"""The sandbox's speed-ups of issue 37 leave what the worker is and what it reports as they were.

- A warm template compiles the worker program and its codec once; a fork runs that code under
  the shipped files' own names, so the worker is what a fresh interpreter would have run (the
  cold worker is the authority).
- A question's calls before its last skip the worker's read of its mappings; the reply of the
  last call (or of any call that raised or hit a ban) still reads them.
- A session launched, then waited for, grades as one started at once; one closed before it was
  waited for leaves nothing behind.
- The caller's work for a call (`meanwhile`: the reference's output) runs while the worker
  computes, once per call.
- A worker has the same modules before the student's import, warm or cold (numpy.random too).
"""

from __future__ import annotations

import importlib.util
import marshal
import textwrap
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from grader.course import content
from grader.sandbox import zygote
from grader.sandbox.session import WorkerSession

PROBE = textwrap.dedent("""
    import sys

    def where():
        main = sys.modules["__main__"]
        wire = main._wire
        return {
            "file": main.__file__,
            "serve": main._serve.__code__.co_filename,
            "nested": main._make_hit.__code__.co_consts and [
                c.co_filename for c in main._make_hit.__code__.co_consts if hasattr(c, "co_filename")
            ],
            "wire": wire.__file__,
            "wire_code": wire.encode.__code__.co_filename,
            "given": sorted(k for k in vars(main) if "compiled" in k),
            "argv": sys.argv,
        }

    def two(x):
        return 2 * x
""")


@pytest.fixture(params=["warm", "cold"])
def mode(request) -> Iterator[str]:
    was = zygote.enabled()
    zygote.enable(request.param == "warm")
    try:
        yield request.param
    finally:
        zygote.enable(was)


def _session(source: str, **kw) -> WorkerSession:
    return WorkerSession({"probe.py": source.encode()}, "probe", hide=content.grader_trees(), **kw)


def test_the_worker_runs_under_its_shipped_names_warm_as_cold(mode):
    s = _session(PROBE)
    try:
        out = s.call("where", (), {})
    finally:
        s.close()
    assert out.ok, out.failure
    got = out.value
    assert got["file"].endswith("/worker.py") and got["argv"] == [got["file"]]
    assert got["serve"] == got["file"] and got["nested"] and set(got["nested"]) == {got["file"]}
    assert got["wire"].endswith("/seqgrade_wire.py") and got["wire_code"] == got["wire"]
    assert got["wire"].rpartition("/")[0] == got["file"].rpartition("/")[0]
    assert got["given"] == []  # nothing of the template's left in the worker's names


def test_calls_that_skip_the_mappings_read_give_the_same_values(mode):
    s = _session(PROBE, tripwires=("torch.*",))
    try:
        values = [s.call("two", (i,), {}, banned=("torch.*",), check=i == 4) for i in range(5)]
    finally:
        s.close()
    assert [v.value for v in values] == [0, 2, 4, 6, 8]
    assert not s.tampered


def test_a_session_launched_then_waited_for_is_one_started_at_once(mode):
    s = _session(PROBE)
    try:
        s.launch()
        s.wait_started()
        assert s.proc is not None
        assert s.call("two", (21,), {}).value == 42
    finally:
        s.close()
    assert s.proc is None


def _plant_cache(source: Path, code: types.CodeType) -> None:
    """`code` written as the bytecode cache of `source`, under the source's own mtime and size
    (a cache an interpreter takes as fresh)."""
    stat = source.stat()
    header = importlib.util.MAGIC_NUMBER + (0).to_bytes(4, "little")
    header += (int(stat.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little")
    header += (stat.st_size & 0xFFFFFFFF).to_bytes(4, "little")
    cache = Path(importlib.util.cache_from_source(str(source)))
    cache.parent.mkdir(exist_ok=True)
    cache.write_bytes(header + marshal.dumps(code))


def test_a_template_reads_the_worker_code_the_grader_cached(tmp_path, monkeypatch):
    """The grader writes the bytecode of what a template compiles (`zygote.cache_bytecode`);
    the template (an interpreter that writes none) reads it: the same code as compiling the
    source (the authority), and, once the cache is replaced by other code with the source's
    header, that code, which shows the cache is what it read."""
    import shutil
    import subprocess
    import sys

    from grader.sandbox import launcher

    here = Path(launcher.__file__).parent
    for name in ("launcher.py", *launcher.WARM_FILES):
        shutil.copy(here / name, tmp_path / name)
    monkeypatch.setattr(launcher, "__file__", str(tmp_path / "launcher.py"))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    zygote.cache_bytecode()
    caches = {
        n: Path(importlib.util.cache_from_source(str(tmp_path / n))) for n in launcher.WARM_FILES
    }
    assert all(c.is_file() for c in caches.values())

    def template_code() -> dict[str, str]:
        script = (
            f"import sys; sys.path.insert(0, {str(tmp_path)!r}); import launcher\n"
            "launcher._precompile()\n"
            "print(repr({c.co_filename.rpartition('/')[2]: c.co_code.hex() + repr(c.co_consts[:3])"
            " for c in launcher._WARM_CODE.values()}))\n"
        )
        done = subprocess.run(
            [sys.executable, "-I", "-S", "-B", "-c", script], capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        return eval(done.stdout)  # noqa: S307 - our own script's repr of strings

    def compiled(source: str, name: str) -> str:
        c = compile(source, name, "exec", dont_inherit=True)
        return c.co_code.hex() + repr(c.co_consts[:3])

    sources = {n: (tmp_path / n).read_text() for n in launcher.WARM_FILES}
    assert template_code() == {n: compiled(s, n) for n, s in sources.items()}
    # the worker's cache replaced by other code under the real source's mtime and size
    other = compile("PLANTED = 'from the cache'\n", "worker.py", "exec", dont_inherit=True)
    _plant_cache(tmp_path / "worker.py", other)
    got = template_code()
    assert got["worker.py"] == compiled("PLANTED = 'from the cache'\n", "worker.py")
    assert got["wire.py"] == compiled(sources["wire.py"], "wire.py")


def test_the_launcher_runs_as_its_script_would_from_the_cached_bytecode(tmp_path):
    """`runtime.launcher_command` runs a script as `python -I -S -B script args` does (the
    authority: the same `__name__`, `__file__` and argv), from the bytecode cached for it when
    that is fresh (a cache replaced by other code under the source's mtime and size is what
    runs), and from its source when there is none; zygote.cache_bytecode caches launcher.py."""
    import shutil
    import subprocess
    import sys

    from grader.sandbox import launcher, runtime

    script = tmp_path / "script.py"
    script.write_text("import sys\nprint(__name__, __file__, sys.argv[1:], 'source')\n")
    plain = subprocess.run(
        [sys.executable, "-I", "-S", "-B", str(script), "--x", "1"], capture_output=True, text=True
    )
    ours = subprocess.run(runtime.launcher_command(str(script), "--x", "1"), capture_output=True)
    assert plain.returncode == 0 and plain.stdout.endswith(" source\n"), plain.stderr
    assert ours.returncode == 0 and ours.stdout.decode() == plain.stdout  # no cache yet
    planted = compile(
        "import sys\nprint(__name__, __file__, sys.argv[1:], 'cache')\n", str(script), "exec"
    )
    _plant_cache(script, planted)
    ours = subprocess.run(runtime.launcher_command(str(script), "--x", "1"), capture_output=True)
    assert ours.stdout.decode() == plain.stdout.replace(" source\n", " cache\n")
    # the launcher itself: its cache is written with the worker's, and it runs from it
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in ("launcher.py", *launcher.WARM_FILES):
        shutil.copy(Path(launcher.__file__).parent / name, copy / name)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(launcher, "__file__", str(copy / "launcher.py"))
        mp.setattr(sys, "dont_write_bytecode", False)
        zygote.cache_bytecode()
    assert Path(importlib.util.cache_from_source(str(copy / "launcher.py"))).is_file()
    usage = subprocess.run(runtime.launcher_command(str(copy / "launcher.py")), capture_output=True)
    assert usage.returncode == 2 and b"usage: launcher.py" in usage.stderr


def test_a_launch_cancelled_before_it_was_waited_for_leaves_nothing(mode):
    """`WorkerSession.launch` starts the launcher at once; a session closed before
    `wait_started` stops it: no process of its uid, no scratch folder, no lease kept."""
    import time

    from grader.sandbox import uids

    s = _session(PROBE)
    s.launch()
    launch = s._launch
    assert launch is not None and s.proc is None
    attempt = launch._attempt
    base, lease = attempt.base.path, attempt.lease
    s.close()
    assert s._launch is None and s.proc is None
    assert not base.exists()
    if lease is not None:
        deadline = time.monotonic() + 5
        while uids.pids_of_uid(lease.uid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not uids.pids_of_uid(lease.uid)
        assert lease._fd == -1  # released: free for the next sandbox


def test_the_callers_work_runs_once_while_the_worker_computes(mode):
    """`meanwhile` runs after the request is sent and before its reply is read (the request is
    then the one awaiting its reply): once a call, whatever the call's outcome, and the call's
    value is the same as without it."""
    source = PROBE + textwrap.dedent("""
        def fails(x):
            raise ValueError("no")
    """)
    s = _session(source)
    pending: list[int] = []
    try:
        assert s.call("two", (3,), {}).value == 6  # started and imported
        got = s.call("two", (1,), {}, meanwhile=lambda: pending.append(len(s._expect)))
        assert got.value == 2 and pending == [1] and s._expect == []
        bad = s.call("fails", (1,), {}, meanwhile=lambda: pending.append(len(s._expect)))
        assert bad.failure is not None and pending == [1, 1] and s._expect == []
    finally:
        s.close()


def test_a_worker_has_numpy_random_before_the_students_module_warm_as_cold(mode):
    """The preload (`runtime.preload`) imports numpy.random in a fresh worker's hello as the
    warm template does before it forks: a submission sees the same modules either way."""
    from grader.sandbox import runtime

    source = (
        "import sys\nLOADED = 'numpy.random' in sys.modules\n\ndef loaded():\n    return LOADED\n"
    )
    s = _session(source, preload=runtime.preload(False))
    try:
        assert s.call("loaded", (), {}).value is True
    finally:
        s.close()


def test_the_callers_work_never_turns_a_call_into_a_timeout(mode):
    """The call's limit is counted once the caller's work is done: work longer than the limit
    still finds the worker's answer (it was waiting), not a timeout."""
    import time

    from grader import sandbox

    s = _session(PROBE, limits=sandbox.Limits(call_seconds=0.5, submission_seconds=60.0))
    try:
        got = s.call("two", (4,), {}, meanwhile=lambda: time.sleep(0.8))
        assert got.failure is None and got.value == 8
        assert not s.events  # nothing stopped or restarted
    finally:
        s.close()
