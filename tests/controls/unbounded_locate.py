"""A control for tests/test_hostile_files.py: reading a submission without one budget.

Every `.ipynb` of the chosen folder is read whole (each up to its own cap, none counted
toward the total), a zip's whole central directory is parsed before the member cap applies,
and members are read by `zipfile` at their declared sizes. The tests run an attack against
this reading to show that it works there, and against grader/engine/locate.py to show that
it does not.
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

MAX_FILE_BYTES = 2 << 20  # a student's source or answers file
MAX_NOTEBOOK_BYTES = 160 << 20  # a notebook, outputs included (they are dropped unread)
MAX_TOTAL_BYTES = 64 << 20
MAX_MEMBERS = 2000
_IGNORED_DIRS = {
    "__MACOSX",
    "__pycache__",
    ".git",
    ".ipynb_checkpoints",
    "venv",
    ".venv",
    "node_modules",
}
_KEPT_SUFFIXES = {".py", ".toml", ".ipynb"}


class SubmissionError(Exception):
    """The submission as a whole cannot be read (not a folder or zip, a broken zip)."""


@dataclass
class Located:
    """The files of one submission folder, read into memory (the grader never writes there)."""

    files: dict[str, bytes] = field(default_factory=dict)  # name -> content, from the chosen folder
    folder: str = ""  # the folder they came from, relative to the submission ("" = top level)
    listing: list[str] = field(default_factory=list)  # every path seen, for "found: …" messages
    notes: list[str] = field(default_factory=list)  # files skipped (too large, unreadable)
    # A file made from another (a notebook's cells as `<stem>.py`): the text the shortcut scan and
    # the syntax check read, line for line with what runs; where it came from, for messages.
    read_as: dict[str, str] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)  # name -> "the `# answers.toml` cell …"
    problems: dict[str, str] = field(
        default_factory=dict
    )  # name -> why its stand-in could not be read
    notebook: Any = (
        None  # a grader.engine.notebook.NotebookRun when the code file came from a notebook
    )

    def text(self, name: str) -> str | None:
        """The file's text as the student wrote it (for a notebook's code file: its code cells)."""
        if name in self.read_as:
            return self.read_as[name]
        data = self.files.get(name)
        if data is None:
            return None
        return data.decode("utf-8", errors="replace")

    def missing_message(self, name: str) -> str:
        if name in self.problems:
            return self.problems[name]
        seen = ", ".join(f"`{p}`" for p in self.listing[:12]) or "no files"
        more = f" and {len(self.listing) - 12} more" if len(self.listing) > 12 else ""
        alt = f" (nor a notebook `{name[:-3]}.ipynb`)" if name.endswith(".py") else ""
        return (
            f"`{name}` was not found{alt}: put it at the top level of the submission or inside one "
            f"folder (found: {seen}{more})"
        )


def _entries_from_dir(root: Path) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if any(part in _IGNORED_DIRS or part.startswith(".") for part in rel.parts):
            continue
        if len(rel.parts) > 3 or len(out) >= MAX_MEMBERS:
            continue
        if path.is_file() and not path.is_symlink():
            out[rel.as_posix()] = path
    return out


def _entries_from_zip(zf: zipfile.ZipFile) -> dict[str, zipfile.ZipInfo]:
    out: dict[str, zipfile.ZipInfo] = {}
    for info in zf.infolist()[:MAX_MEMBERS]:
        if info.is_dir():
            continue
        rel = PurePosixPath(info.filename.replace("\\", "/"))
        if rel.is_absolute() or ".." in rel.parts:
            continue  # never follow a path out of the archive
        if (
            any(part in _IGNORED_DIRS or part.startswith(".") for part in rel.parts)
            or len(rel.parts) > 3
        ):
            continue
        out[rel.as_posix()] = info
    return out


def _choose_folder(paths: list[str], wanted: tuple[str, ...]) -> str:
    """The folder holding the wanted files: the top level, else the shallowest folder with one."""
    folders: dict[str, int] = {}
    for p in paths:
        pp = PurePosixPath(p)
        if pp.name in wanted:
            folder = str(pp.parent) if str(pp.parent) != "." else ""
            folders[folder] = folders.get(folder, 0) + 1
    if not folders:
        return ""
    # Most wanted files first, then the shallowest folder.
    return min(folders, key=lambda f: (-folders[f], f.count("/") if f else -1, f))


def locate(submission: Path, wanted: tuple[str, ...]) -> Located:
    """Read the submission's files from the folder that holds `wanted` (code file, answers.toml).

    A notebook of a wanted code file's stem (`transformer.ipynb`) counts as that file.
    """
    submission = Path(submission)
    wanted = wanted + tuple(n[:-3] + ".ipynb" for n in wanted if n.endswith(".py"))
    if not submission.exists():
        raise SubmissionError(f"the submission {submission} does not exist")
    located = Located()
    if submission.is_dir():
        entries = _entries_from_dir(submission)
        located.listing = sorted(entries)
        located.folder = _choose_folder(located.listing, wanted)

        def read(rel: str) -> bytes:
            return entries[rel].read_bytes()

        sizes = {rel: p.stat().st_size for rel, p in entries.items()}
        _collect(located, sizes, read)
        return located
    if zipfile.is_zipfile(submission):
        try:
            with zipfile.ZipFile(submission) as zf:
                entries = _entries_from_zip(zf)
                located.listing = sorted(entries)
                located.folder = _choose_folder(located.listing, wanted)
                sizes = {rel: info.file_size for rel, info in entries.items()}
                _collect(located, sizes, lambda rel: zf.read(entries[rel]))
        except (zipfile.BadZipFile, OSError, RuntimeError) as exc:
            raise SubmissionError(f"the zip file could not be read: {exc}") from None
        return located
    if submission.suffix in (".py", ".ipynb") or submission.name == "answers.toml":
        located.listing = [submission.name]
        sizes = {submission.name: submission.stat().st_size}
        _collect(located, sizes, lambda rel: submission.read_bytes())
        return located
    raise SubmissionError(f"{submission} is neither a folder nor a .zip file")


def _collect(located: Located, sizes: dict[str, int], read) -> None:
    total = 0
    prefix = f"{located.folder}/" if located.folder else ""
    for rel in located.listing:
        if not rel.startswith(prefix) or "/" in rel[len(prefix) :]:
            continue
        name = rel[len(prefix) :]
        if PurePosixPath(name).suffix not in _KEPT_SUFFIXES:
            continue
        if name.endswith(".ipynb"):
            if sizes[rel] > MAX_NOTEBOOK_BYTES:
                why = (
                    f"`{rel}` skipped: larger than {MAX_NOTEBOOK_BYTES >> 20} MiB (clear its outputs in "
                    "Jupyter or Colab and submit it again)"
                )
                located.notes.append(why)
                located.problems[name[: -len(".ipynb")] + ".py"] = (
                    f"{why}; no function in it could be run."
                )
                continue
        elif sizes[rel] > MAX_FILE_BYTES or total + sizes[rel] > MAX_TOTAL_BYTES:
            located.notes.append(f"`{rel}` skipped: larger than {MAX_FILE_BYTES >> 20} MiB")
            continue
        try:
            located.files[name] = read(rel)
        except (OSError, KeyError, RuntimeError) as exc:
            located.notes.append(f"`{rel}` could not be read: {exc}")
            continue
        if not name.endswith(".ipynb"):
            total += sizes[rel]
