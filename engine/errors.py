"""The one base of every error Trove reports to a person: its text is the sentence shown.

Each error says, in one line, what went wrong and then what to do, in the style
of a command-line tool's message: lowercase, no closing period, often after the
place it is about (`<file>: <key>: expected ...`). Front ends print `str(error)`
and never a traceback for a TroveError. What is not an error (a command's result,
a notice, a toast) is written as sentences, capital first, period last.
"""

from __future__ import annotations


class TroveError(Exception):
    """An error with a user-facing sentence as its text."""
