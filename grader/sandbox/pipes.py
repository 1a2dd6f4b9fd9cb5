"""One deadline reader for the pipes of a helper process (a sandboxed worker, the expression checker).

Reads raw bytes from a file descriptor with select(), never blocking past a deadline
(time.monotonic()), and keeps what it read past the last line or frame for the next read.
"""

from __future__ import annotations

import os
import select
import time


class DeadlineReader:
    """Lines and exact-size frames from one fd, each read bounded by a deadline."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._buf = b""  # read past the last line or frame returned

    def _fill(self, deadline: float, timeout: float) -> None:
        """Append one chunk to the buffer, or raise TimeoutError / EOFError."""
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([self.fd], [], [], left)[0]:
            raise TimeoutError(f"no reply within {timeout:g} s")
        chunk = os.read(self.fd, 1 << 16)
        if not chunk:
            raise EOFError("the other side closed its output")
        self._buf += chunk

    def readline(self, timeout: float, limit: int = 64 << 20) -> bytes:
        """One line (with its newline), or TimeoutError / EOFError / ValueError (too long)."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buf:
            if len(self._buf) > limit:
                raise ValueError(f"a line longer than {limit} bytes")
            self._fill(deadline, timeout)
        line, _, self._buf = self._buf.partition(b"\n")
        return line + b"\n"

    def read_exact(self, n: int, timeout: float) -> bytes:
        """Exactly n bytes, or TimeoutError / EOFError."""
        deadline = time.monotonic() + timeout
        while len(self._buf) < n:
            self._fill(deadline, timeout)
        data, self._buf = self._buf[:n], self._buf[n:]
        return data

    def lines_until(self, done: tuple[str, ...], timeout: float) -> tuple[list[str], str | None]:
        """Text lines until one starts with a word of `done`, the end of file, or the deadline.

        Returns (the complete lines read, None), or (the lines so far, "timeout") when the
        deadline passed first. The end of file ends the list without an error.
        """
        deadline = time.monotonic() + timeout
        while True:
            lines = self._buf.decode(errors="replace").split("\n")[:-1]
            if any(line.startswith(done) for line in lines):
                return lines, None
            try:
                self._fill(deadline, timeout)
            except TimeoutError:
                return lines, "timeout"
            except EOFError:
                return self._buf.decode(errors="replace").splitlines(), None
