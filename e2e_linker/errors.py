"""Errors the CLI reports as one line with exit code 2 instead of a traceback."""

from __future__ import annotations

from data_tools.documents import FormatError
from data_tools.formats.atomic import OutputError


class UserError(Exception):
    """A problem with what the user asked for (missing file, bad option, mismatched model/KB)."""


class DocumentFailed(Exception):
    """Processing one document failed (the message names its file and ID).

    Raised when a document that reads fine still breaks the annotator, so that a corpus run
    stops with a one-line error naming the culprit instead of a traceback; ``--on-error skip``
    skips it instead, and ``E2E_LINKER_DEBUG=1`` shows the underlying traceback.
    """


#: Exceptions that are the input's or the user's fault: reported without a traceback.
EXPECTED_ERRORS: tuple[type[BaseException], ...] = (
    FormatError,
    OutputError,
    UserError,
    DocumentFailed,
    FileNotFoundError,
    IsADirectoryError,
    PermissionError,
    UnicodeDecodeError,
)
