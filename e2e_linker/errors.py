"""Errors the CLI reports as one line with exit code 2 instead of a traceback."""

from __future__ import annotations

from data_tools.documents import FormatError


class UserError(Exception):
    """A problem with what the user asked for (missing file, bad option, mismatched model/KB)."""


#: Exceptions that are the input's or the user's fault: reported without a traceback.
EXPECTED_ERRORS: tuple[type[BaseException], ...] = (
    FormatError,
    UserError,
    FileNotFoundError,
    IsADirectoryError,
    PermissionError,
    UnicodeDecodeError,
)
