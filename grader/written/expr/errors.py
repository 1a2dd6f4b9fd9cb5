"""The one error a student's unreadable answer raises, and the message for an undefined one."""

from __future__ import annotations


class ExprError(ValueError):
    """An answer that cannot be read; the message is meant for the student."""


UNDEFINED = "the answer is undefined (a division by zero?)"
