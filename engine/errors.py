"""The one base of every error Trove reports to a person: its text is the sentence shown.

Each error says, in one line, what went wrong and what to do; front ends print
`str(error)` and never a traceback for a TroveError.
"""

from __future__ import annotations


class TroveError(Exception):
    """An error with a user-facing sentence as its text."""
