"""Where the models shipped inside the package live: the one place both linkers look.

``linker annotate`` reads the collective model in :data:`DEFAULT_MODEL_DIR`; ``linker normalize``
reads the triplet-trained normalizer beside it, :data:`DEFAULT_NORMALIZER_DIR` (an adapter over
the same packaged MiniLM, its ``normalizer.json`` and training mentions).
"""

from __future__ import annotations

from pathlib import Path

#: The collective model (fp16 safetensors), used when ``--model`` is not given.
DEFAULT_MODEL_DIR = Path(__file__).resolve().parent / "default_model"
#: The default normalizer model directory (see :mod:`e2e_linker.normalizer.normalizer_dir`).
DEFAULT_NORMALIZER_DIR = DEFAULT_MODEL_DIR / "normalizer"
