"""Turn a broken or unsafe model directory into one clear error instead of a traceback.

Weights are only ever read from safetensors: ``CollectiveLinker.load`` refuses a model
directory holding any pickle file and the encoder loader refuses a folder with pickle weights
only (``use_safetensors=True`` everywhere), so nothing in a model directory can run code.
What remains is a directory that is damaged (a truncated safetensors file, a pickle renamed
``.safetensors``, a hand-edited config): the loaders then raise whatever their libraries raise
(``SafetensorError``, ``JSONDecodeError``, ``OSError``...). :func:`loading_model` names the
directory and the problem in one line (exit code 2); ``E2E_LINKER_DEBUG=1`` shows the chain.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from data_tools.documents import FormatError
from e2e_linker.errors import UserError


def _load_errors() -> tuple[type[BaseException], ...]:
    # TypeError/AttributeError too: a JSON file of the wrong shape ([] for {}) surfaces so
    errors: tuple[type[BaseException], ...] = (ValueError, OSError, KeyError, RuntimeError,
                                               TypeError, AttributeError)
    try:
        from safetensors import SafetensorError

        errors += (SafetensorError,)
    except ImportError:  # older safetensors: its error is a plain Exception subclass elsewhere
        pass
    return errors


@contextmanager
def loading_model(model_dir: str | os.PathLike | None) -> Iterator[None]:
    """Re-raise any loader failure inside the block as a one-line :class:`UserError`."""
    try:
        yield
    except (UserError, FormatError, FileNotFoundError):
        raise  # already a clear message
    except _load_errors() as exc:
        what = str(model_dir) if model_dir else "the embedded default model"
        detail = (str(exc).strip().splitlines() or [""])[0]
        raise UserError(f"{what}: cannot load the model ({type(exc).__name__}: {detail})") \
            from exc
