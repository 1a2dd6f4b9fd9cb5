"""Finding the student's files in a folder or a .zip: at the top level or in one nested folder.

Everything read from a submission shares one budget (`MAX_TOTAL_BYTES`), whatever the file kind,
and each file has its own cap (`MAX_FILE_BYTES`, `MAX_NOTEBOOK_BYTES`). A zip's central directory
is walked here, its entry count and size checked before anything is decompressed, and every
member is decompressed in bounded steps that stop at the first byte past its limit: the declared
sizes are checked first, the actual bytes always. Only the files grading uses are read (the code
file or its notebook, `answers.toml`, the student's other `.py` modules), the ones it needs first,
so a large or lying file costs only itself, named in the notes.
"""

from __future__ import annotations

import bz2
import lzma
import os
import struct
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO, TypeVar

from grader.engine.renamed import note as renamed_note
from grader.engine.renamed import stand_ins

MAX_FILE_BYTES = 2 << 20  # a student's source or answers file
MAX_NOTEBOOK_BYTES = 160 << 20  # a notebook, outputs included (they are dropped unread)
MAX_TOTAL_BYTES = 192 << 20  # everything read from one submission, notebooks included
MAX_MEMBERS = 2000  # files of a submission looked at (listed, perhaps read)
MAX_SCANNED_ENTRIES = 100_000  # folder entries or zip records walked to find those files
MAX_CENTRAL_DIRECTORY_BYTES = 16 << 20  # a zip's directory of entries, read whole
MAX_DEPTH = 3  # path components below the submission (one nested folder and a little more)
_CHUNK = 64 << 10  # bytes read or decompressed per step
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
ANSWERS_FILE = "answers.toml"
T = TypeVar("T")


class SubmissionError(Exception):
    """The submission as a whole cannot be read (not a folder or zip, a broken zip)."""


class _TooLarge(Exception):
    """A file yields more bytes than it may (its cap or what is left of the budget)."""


class _Unreadable(Exception):
    """One member of a zip cannot be read (encrypted, an unknown compression, corrupt)."""


@dataclass
class Located:
    """The files of one submission folder, read into memory (the grader never writes there)."""

    files: dict[str, bytes] = field(default_factory=dict)
    """Name -> content, from the chosen folder."""
    folder: str = ""
    """The folder they came from, relative to the submission ("" = top level)"""
    listing: list[str] = field(default_factory=list)
    """Every path seen, for "found: …" messages."""
    notes: list[str] = field(default_factory=list)
    """Files skipped (too large, unreadable)."""
    # A file made from another (a notebook's cells as `<stem>.py`): the text the shortcut scan and
    # the syntax check read, line for line with what runs; where it came from, for messages.
    read_as: dict[str, str] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    """Name -> "the `# answers.toml` cell …"."""
    problems: dict[str, str] = field(default_factory=dict)
    """Name -> why it (or its stand-in) could not be read."""
    notebook: Any = None
    """A grader.engine.notebook.NotebookRun when the code file came from a notebook."""
    bytes_read: int = 0
    """What reading the submission cost, counted against MAX_TOTAL_BYTES."""

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


# --------------------------------------------------------------------------- listing


def _skipped_path(parts: tuple[str, ...]) -> bool:
    return any(part in _IGNORED_DIRS or part.startswith(".") for part in parts)


def _entries_from_dir(root: Path, notes: list[str]) -> dict[str, Path]:
    """Regular files (no symlinks) at most MAX_DEPTH deep, the ignored folders never entered;
    at most MAX_SCANNED_ENTRIES directory entries looked at, MAX_MEMBERS files kept."""
    out: dict[str, Path] = {}
    scanned = 0

    def walk(folder: Path, parts: tuple[str, ...]) -> None:
        nonlocal scanned
        names: list[os.DirEntry[str]] = []
        try:
            with os.scandir(folder) as it:
                for entry in it:
                    scanned += 1
                    if scanned > MAX_SCANNED_ENTRIES:
                        break
                    names.append(entry)
        except OSError:
            return
        for entry in sorted(names, key=lambda e: e.name):
            rel = (*parts, entry.name)
            if _skipped_path(rel) or len(out) > MAX_MEMBERS:
                continue
            if entry.is_dir(follow_symlinks=False):
                if len(rel) < MAX_DEPTH:
                    walk(Path(entry.path), rel)
            elif entry.is_file(follow_symlinks=False):
                out["/".join(rel)] = Path(entry.path)

    walk(root, ())
    if len(out) > MAX_MEMBERS:
        notes.append(_too_many_files())
        out = dict(list(out.items())[:MAX_MEMBERS])
    if scanned > MAX_SCANNED_ENTRIES:
        notes.append(
            f"the submission holds more than {MAX_SCANNED_ENTRIES:,} files and folders: only the "
            "first were looked at"
        )
    return out


def _too_many_files() -> str:
    return f"the submission holds more than {MAX_MEMBERS:,} files: only the first were looked at"


# --------------------------------------------------------------------------- zip files

_EOCD = struct.Struct("<4s4H2LH")  # end of central directory: …, entries, size, offset, comment
_EOCD64_LOCATOR = struct.Struct("<4sLQL")
_EOCD64 = struct.Struct("<4sQ2H2L4Q")  # zip64 end record: …, entries (twice), size, offset
_CENTRAL = struct.Struct("<4s4B4HL2L5H2L")  # one central directory record (46 bytes)
_LOCAL = struct.Struct("<4s2B4HL2L2H")  # a member's local header (30 bytes)
_ZIP64_EXTRA = 0x0001
_STORED, _DEFLATED, _BZIP2, _LZMA = 0, 8, 12, 14
_METHOD_NAMES = {9: "Deflate64", 93: "Zstandard", 95: "XZ", 98: "PPMd", 99: "AES"}


@dataclass(frozen=True)
class ZipEntry:
    """One member as the central directory declares it."""

    name: str
    flags: int
    """Bit 0: encrypted."""
    method: int
    """0 stored, 8 deflate, 12 bzip2, 14 LZMA."""
    crc: int
    compressed: int
    """Declared compressed size."""
    size: int
    """Declared size: checked first, never trusted."""
    offset: int
    """The offset of its local header in the file (any bytes before the archive counted)."""


def _zip64_fields(extra: bytes, wanted: list[str]) -> dict[str, int]:
    """The zip64 extra field's 8-byte values, in order, for the fields that overflowed."""
    pos = 0
    while pos + 4 <= len(extra):
        kind, length = struct.unpack_from("<2H", extra, pos)
        body = extra[pos + 4 : pos + 4 + length]
        if kind == _ZIP64_EXTRA:
            values = [
                struct.unpack_from("<Q", body, 8 * i)[0]
                for i in range(min(len(wanted), len(body) // 8))
            ]
            return dict(zip(wanted, values))
        pos += 4 + length
    return {}


def _zip_directory(fh: BinaryIO, notes: list[str]) -> Iterator[ZipEntry]:
    """The central directory's records, found from the end records without decompressing
    anything: at most MAX_SCANNED_ENTRIES records within MAX_CENTRAL_DIRECTORY_BYTES."""
    size = fh.seek(0, os.SEEK_END)
    tail_len = min(size, _EOCD.size + 0xFFFF)
    fh.seek(size - tail_len)
    tail = fh.read(tail_len)
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or at + _EOCD.size > len(tail):
        raise SubmissionError("the zip file could not be read: no end of central directory")
    eocd_pos = size - tail_len + at
    _, _, _, _, declared, cd_size, cd_offset, _ = _EOCD.unpack_from(tail, at)
    cd_end = eocd_pos
    locator_at = at - _EOCD64_LOCATOR.size
    if locator_at >= 0 and tail[locator_at : locator_at + 4] == b"PK\x06\x07":
        fh.seek(eocd_pos - _EOCD64_LOCATOR.size - _EOCD64.size)
        record = fh.read(_EOCD64.size)
        if len(record) == _EOCD64.size and record[:4] == b"PK\x06\x06":
            _, _, _, _, _, _, _, declared, cd_size, cd_offset = _EOCD64.unpack(record)
            cd_end = eocd_pos - _EOCD64_LOCATOR.size - _EOCD64.size
    cd_start = cd_end - cd_size
    if cd_start < 0:
        raise SubmissionError("the zip file could not be read: its central directory is damaged")
    prefix = cd_start - cd_offset  # bytes before the archive (a self-extracting stub)
    fh.seek(cd_start)
    directory = fh.read(min(cd_size, MAX_CENTRAL_DIRECTORY_BYTES))
    pos = walked = 0
    while pos + _CENTRAL.size <= len(directory) and walked < MAX_SCANNED_ENTRIES:
        fields = _CENTRAL.unpack_from(directory, pos)
        if fields[0] != b"PK\x01\x02":
            raise SubmissionError(
                "the zip file could not be read: its central directory is damaged"
            )
        flags, method = fields[5], fields[6]
        crc, compressed, declared_size = fields[9], fields[10], fields[11]
        name_len, extra_len, comment_len = fields[12], fields[13], fields[14]
        offset = fields[18]
        end = pos + _CENTRAL.size + name_len + extra_len + comment_len
        if end > len(directory):
            break  # cut at MAX_CENTRAL_DIRECTORY_BYTES
        raw_name = directory[pos + _CENTRAL.size : pos + _CENTRAL.size + name_len]
        name = raw_name.decode("utf-8" if flags & 0x800 else "cp437", errors="replace")
        overflowed = [
            k
            for k, v in (("size", declared_size), ("compressed", compressed), ("offset", offset))
            if v == 0xFFFFFFFF
        ]
        if overflowed:
            extra = directory[
                pos + _CENTRAL.size + name_len : pos + _CENTRAL.size + name_len + extra_len
            ]
            big = _zip64_fields(extra, overflowed)
            declared_size = big.get("size", declared_size)
            compressed = big.get("compressed", compressed)
            offset = big.get("offset", offset)
        yield ZipEntry(name, flags, method, crc, compressed, declared_size, offset + prefix)
        walked += 1
        pos = end
    if pos < cd_size:
        notes.append(
            f"the zip declares {declared:,} entries in {cd_size:,} bytes of directory: only the "
            f"first {walked:,} were looked at"
        )


def _entries_from_zip(entries: Iterator[ZipEntry], notes: list[str]) -> dict[str, ZipEntry]:
    """The first MAX_MEMBERS files of the directory, as a folder's would be kept."""
    out: dict[str, ZipEntry] = {}
    for entry in entries:
        if len(out) >= MAX_MEMBERS:
            notes.append(_too_many_files())
            break
        if entry.name.endswith("/"):
            continue
        rel = PurePosixPath(entry.name.replace("\\", "/"))
        if rel.is_absolute() or ".." in rel.parts:
            continue  # never follow a path out of the archive
        if _skipped_path(rel.parts) or len(rel.parts) > MAX_DEPTH:
            continue
        out[rel.as_posix()] = entry
    return out


def _decompressed(fh: BinaryIO, entry: ZipEntry) -> Iterator[bytes]:
    """The member's bytes in steps of at most _CHUNK (a bomb never expands in one step)."""
    if entry.flags & 0x1:
        raise _Unreadable("it is encrypted")
    if entry.method not in (_STORED, _DEFLATED, _BZIP2, _LZMA):
        method = _METHOD_NAMES.get(entry.method, f"method {entry.method}")
        raise _Unreadable(f"it uses a compression the grader does not read ({method})")
    fh.seek(entry.offset)
    header = fh.read(_LOCAL.size)
    if len(header) < _LOCAL.size or header[:4] != b"PK\x03\x04":
        raise _Unreadable("its local header is damaged")
    fields = _LOCAL.unpack(header)
    fh.seek(entry.offset + _LOCAL.size + fields[10] + fields[11])  # name, extra field
    left = entry.compressed
    if entry.method == _STORED:
        while left > 0:
            piece = fh.read(min(_CHUNK, left))
            if not piece:
                break
            left -= len(piece)
            yield piece
        return
    if entry.method == _DEFLATED:
        inflate = zlib.decompressobj(-15)
        pending = b""
        while not inflate.eof:
            if not pending:
                if left <= 0:
                    yield inflate.flush()  # what the consumed input still holds (< 32 KiB)
                    return
                pending = fh.read(min(_CHUNK, left))
                left -= len(pending)
                if not pending:
                    return
            piece = inflate.decompress(pending, _CHUNK)
            pending = inflate.unconsumed_tail
            yield piece
        return
    if entry.method == _LZMA:
        header = fh.read(4)  # version (2 bytes), then the size of the properties (2 bytes)
        props = fh.read(int.from_bytes(header[2:4], "little")) if len(header) == 4 else b""
        left -= len(header) + len(props)
        stream: Any = lzma.LZMADecompressor(lzma.FORMAT_RAW, filters=[_lzma_filter(props)])
    else:
        stream = bz2.BZ2Decompressor()
    while not stream.eof:
        data = b""
        if stream.needs_input:  # else it still holds output of the input it was given
            if left <= 0:
                return
            data = fh.read(min(_CHUNK, left))
            left -= len(data)
            if not data:
                return
        yield stream.decompress(data, _CHUNK)


def _lzma_filter(props: bytes) -> dict[str, int]:
    """LZMA1's five property bytes: lc, lp and pb packed in one, then the dictionary size."""
    if len(props) != 5:
        raise _Unreadable("its LZMA header is damaged")
    packed, dict_size = props[0], int.from_bytes(props[1:5], "little")
    return {
        "id": lzma.FILTER_LZMA1,
        "dict_size": dict_size,
        "lc": packed % 9,
        "lp": packed // 9 % 5,
        "pb": packed // 45,
    }


def _read_zip_member(fh: BinaryIO, entry: ZipEntry, limit: int) -> bytes:
    """At most `limit` bytes of the member, its CRC checked; _TooLarge past the limit."""
    try:
        data = _capped(_decompressed(fh, entry), limit)
    except (zlib.error, lzma.LZMAError, OSError, EOFError, ValueError) as exc:
        raise _Unreadable(f"it is damaged ({exc})") from None
    if zlib.crc32(data) != entry.crc:
        raise _Unreadable("it is damaged (its checksum does not match)")
    return data


def _capped(pieces: Iterator[bytes], limit: int) -> bytes:
    out = bytearray()
    for piece in pieces:
        out += piece
        if len(out) > limit:
            raise _TooLarge
    return bytes(out)


def _read_file(path: Path, limit: int) -> bytes:
    with open(path, "rb") as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise _TooLarge
    return data


# --------------------------------------------------------------------------- locate


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
    code_files = tuple(n for n in wanted if n.endswith(".py"))
    wanted = wanted + tuple(n[:-3] + ".ipynb" for n in code_files)
    if not submission.exists():
        raise SubmissionError(f"the submission {submission} does not exist")
    located = Located()
    code_file = code_files[0] if code_files else None
    if submission.is_dir():
        paths = _renamed(_entries_from_dir(submission, located.notes), code_file, located.notes)
        located.listing = sorted(paths)
        located.folder = _choose_folder(located.listing, wanted)
        sizes = {rel: p.stat().st_size for rel, p in paths.items()}
        _collect(located, code_files, sizes, lambda rel, limit: _read_file(paths[rel], limit))
        return located
    if zipfile.is_zipfile(submission):
        try:
            with open(submission, "rb") as fh:
                members = _entries_from_zip(_zip_directory(fh, located.notes), located.notes)
                members = _renamed(members, code_file, located.notes)
                located.listing = sorted(members)
                located.folder = _choose_folder(located.listing, wanted)
                sizes = {rel: e.size for rel, e in members.items()}
                _collect(
                    located,
                    code_files,
                    sizes,
                    lambda rel, limit: _read_zip_member(fh, members[rel], limit),
                )
        except (OSError, struct.error) as exc:
            raise SubmissionError(f"the zip file could not be read: {exc}") from None
        return located
    if submission.suffix in (".py", ".ipynb", ".toml"):
        name = next(iter(_renamed({submission.name: None}, code_file, located.notes)))
        located.listing = [name]
        sizes = {name: submission.stat().st_size}
        _collect(located, code_files, sizes, lambda rel, limit: _read_file(submission, limit))
        return located
    raise SubmissionError(f"{submission} is neither a folder nor a .zip file")


def _renamed(entries: dict[str, T], code_file: str | None, notes: list[str]) -> dict[str, T]:
    """The entries with a file submitted under another name (`Copy of transformer.ipynb`) under
    the name asked for, when one unambiguously stands in for a missing one (grader.engine.renamed)."""
    for original, name in stand_ins(sorted(entries), code_file, ANSWERS_FILE).items():
        entries[name] = entries.pop(original)
        notes.append(renamed_note(original, name))
    return entries


def _cap(name: str) -> int:
    return MAX_NOTEBOOK_BYTES if name.endswith(".ipynb") else MAX_FILE_BYTES


def _too_large(rel: str, name: str, over_budget: bool) -> str:
    if over_budget:
        return (
            f"`{rel}` skipped: the submission's files together are larger than "
            f"{MAX_TOTAL_BYTES >> 20} MiB"
        )
    if name.endswith(".ipynb"):
        return (
            f"`{rel}` skipped: larger than {MAX_NOTEBOOK_BYTES >> 20} MiB (clear its outputs in "
            "Jupyter or Colab and submit it again)"
        )
    return f"`{rel}` skipped: larger than {MAX_FILE_BYTES >> 20} MiB"


def _reading_order(names: list[str], code_files: tuple[str, ...]) -> list[str]:
    """What grading uses, most needed first: the code files, `answers.toml`, the student's
    other modules, their packages' modules; a code file's notebook is read only when that file
    is missing."""
    notebooks = {c[:-3] + ".ipynb" for c in code_files}
    first = [n for n in (*code_files, ANSWERS_FILE) if n in names]
    rest = sorted(
        (n for n in names if n.endswith(".py") and n not in first),
        key=lambda n: (n.count("/"), n),  # the top level's modules before its packages'
    )
    return first + [n for n in sorted(notebooks) if n in names] + rest


def _kept(name: str) -> bool:
    """Is a file of the chosen folder (its path relative to that folder) read? Its code file,
    notebook, answers and other modules at the top, and the modules of its helper packages
    (`minbpe/base.py`), which the worker imports as the student's own code."""
    suffix = PurePosixPath(name).suffix
    return suffix == ".py" if "/" in name else suffix in _KEPT_SUFFIXES


def _collect(
    located: Located,
    code_files: tuple[str, ...],
    sizes: dict[str, int],
    read: Callable[[str, int], bytes],
) -> None:
    """Read the chosen folder's files in `_reading_order` within one budget."""
    prefix = f"{located.folder}/" if located.folder else ""
    in_folder = {
        rel[len(prefix) :]: rel
        for rel in located.listing
        if rel.startswith(prefix) and _kept(rel[len(prefix) :])
    }
    for name in _reading_order(list(in_folder), code_files):
        rel = in_folder[name]
        if name.endswith(".ipynb") and name[:-6] + ".py" in located.files:
            # present but not graded: the engine says it was ignored, and reads nothing of it
            located.files[name] = b""
            continue
        left = MAX_TOTAL_BYTES - located.bytes_read
        limit = min(_cap(name), left)
        why = None
        if sizes[rel] > limit:
            why = _too_large(rel, name, sizes[rel] <= _cap(name))
        else:
            try:
                data = read(rel, limit)
            except _TooLarge:
                why = _too_large(rel, name, limit < _cap(name))
            except (_Unreadable, OSError) as exc:
                why = f"`{rel}` could not be read: {exc}"
            else:
                located.files[name] = data
                located.bytes_read += len(data)
                continue
        located.notes.append(why)
        needed = name[:-6] + ".py" if name.endswith(".ipynb") else name
        if needed in code_files:
            located.problems.setdefault(needed, f"{why}; no function in it could be run.")
        elif needed == ANSWERS_FILE:
            located.problems.setdefault(needed, f"{why}; no written answer could be read.")
