"""What the worker's Python needs to run: its folders and a minimal environment."""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Mapping, MutableMapping
from pathlib import Path


def preload(torch: bool) -> tuple[str, ...]:
    """What a worker imports before the student's module, and its warm template before it
    forks: numpy with its random module (numpy loads it at its first use: about 20 ms inside a
    worker's first call that builds a generator), and torch where the assignment or the
    submission uses it."""
    return ("numpy", "numpy.random", "torch") if torch else ("numpy", "numpy.random")


def package_dir(name: str) -> Path | None:
    """The folder of an importable package, found without importing it."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            return Path(location).resolve()
    if spec.origin and spec.origin not in ("built-in", "frozen"):
        return Path(spec.origin).resolve().parent
    return None


def site_dirs() -> list[str]:
    """The folders `site` puts on an isolated interpreter's path (`python -I`), in its order: each
    site directory, then the folders its .pth files name. The warm template starts with `-S` and
    is given these, so no .pth file's import lines run there (setuptools' distutils shim, a
    container's certificate patch: nothing a worker needs, and on some machines a third of an
    interpreter's start)."""
    import site

    found: list[str] = []
    for sitedir in site.getsitepackages():  # the user's site directory is not read under -I
        if not os.path.isdir(sitedir) or sitedir in found:
            continue
        found.append(sitedir)
        try:
            pth_files = sorted(n for n in os.listdir(sitedir) if n.endswith(".pth"))
        except OSError:
            continue
        for name in pth_files:
            try:
                with open(os.path.join(sitedir, name), encoding="utf-8") as fh:
                    lines = fh.read().splitlines()
            except (OSError, UnicodeDecodeError):
                continue
            for line in lines:
                if not line.strip() or line.startswith(("#", "import ", "import\t")):
                    continue
                folder = os.path.abspath(os.path.join(sitedir, line.rstrip()))
                if os.path.exists(folder) and folder not in found:  # site's test: a zip counts
                    found.append(folder)
    return found


def runtime_paths() -> list[Path]:
    """The interpreter's prefixes and folder, and numpy/torch's site directories (both spellings)."""
    paths = {Path(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)}
    paths.add(Path(sys.executable).parent)
    for name in ("numpy", "torch"):
        folder = package_dir(name)
        if folder is not None:
            paths.add(folder.parent)  # the site directory: the package and its vendored .libs
    resolved = set()
    for p in paths:
        resolved.add(Path(os.path.abspath(p)))
        resolved.add(p.resolve())
    return sorted(resolved)


def unused_site_dirs() -> list[Path]:
    """The base installation's site directories that are not on this interpreter's import path
    (a venv made without `--system-site-packages`): bound with the base prefix, never needed
    by the worker, and covered in its new root, since what was installed there (another copy
    of the grader, say) is not the caller's to know about."""
    import site

    on_path = {Path(os.path.abspath(p or ".")).resolve() for p in sys.path}
    found = site.getsitepackages([sys.base_prefix, sys.base_exec_prefix])
    return sorted(
        {Path(p).resolve() for p in found if os.path.isdir(p) and Path(p).resolve() not in on_path}
    )


def launcher_env() -> dict[str, str]:
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}


# Runs the script named next as `python script` would (the same `__main__`, `__file__` and argv
# from its own name on), from the bytecode the grader cached for it when that is fresh: a script
# is otherwise compiled from its source at every start (launcher.py: about 14 ms of the 35 its
# interpreter takes), and -B keeps the interpreter from caching anything itself.
_FROM_CACHE = (
    "import sys\n"
    "from importlib.machinery import SourceFileLoader\n"
    "__file__ = sys.argv.pop(1)\n"
    "exec(SourceFileLoader('__main__', __file__).get_code('__main__'))\n"
)


def launcher_command(script: str, *args: str) -> list[str]:
    """The command that runs the sandbox's launcher (`script`, grader/sandbox/launcher.py) with
    `args`: isolated from the environment (-I), without `site` (-S), writing no bytecode (-B)."""
    return [sys.executable, "-I", "-S", "-B", "-c", _FROM_CACHE, script, *args]


ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
"""BLAS and OpenMP on one thread, in the worker and in the grader's own processes (`seqgrade`
sets them unless the caller did). The arrays graded are small, and a thread pool only costs:
OpenBLAS starts one thread per core when numpy loads and they spin, so a grader and its warm
template loading numpy side by side on two cores each took about twice as long."""


def one_thread(environ: MutableMapping[str, str] = os.environ) -> None:
    """`ONE_THREAD` for this process and those it starts, where the caller has not chosen;
    called by the process entry points, before anything loads numpy."""
    for name, value in ONE_THREAD.items():
        environ.setdefault(name, value)


def worker_env(scratch: Path, extra: Mapping[str, str] | None) -> dict[str, str]:
    """The worker's whole environment: never the grader's own variables."""
    env = {
        "PATH": os.pathsep.join(
            [str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin"]
        ),
        "HOME": str(scratch),
        "LANG": "C.UTF-8",
        **ONE_THREAD,
        "PYTHONDONTWRITEBYTECODE": "1",
        "USER": "student",
        "LOGNAME": "student",
    }
    env.update(extra or {})
    return env
