"""How long an encode of KB names will take on this machine, said in one line before it starts.

Why: a KB that is not cached yet can take minutes to encode on a CPU, and a run that starts one
without a word looks hung (issue 44: ``--kb medic`` encoded for twelve minutes in silence).
The time is measured, not guessed: a sample of the names is encoded first
(:func:`estimate_seconds`). When the encode takes a minute or more and the caller knows a
cheaper way to what the user asked (``linker annotate`` with a ``--kb`` of its own: the
model's own KB, whose vectors ship or are cached, narrowed with ``--types``), the line names
it. Both of the store's long encodes say it: a list's names its table lacks
(:class:`~e2e_linker.kb_search.store_encoding.StoreEncoding`) and a packed index's missing names
and shortlists (:class:`~e2e_linker.kb_search.partial_matrix.PartialKBMatrix`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from e2e_linker.console import say
from e2e_linker.encoder.text_encoder import TextEncoder

#: names encoded to estimate the time a KB encode will take (spread over the name lengths)
ESTIMATE_SAMPLE = 256
#: an encode estimated at this many seconds or more names the caller's cheaper alternative
LONG_ENCODE_S = 60.0


def estimate_seconds(encoder: TextEncoder, texts: Sequence[str], batch_size: int = 256
                     ) -> float:
    """Seconds encoding ``texts`` will take here, from a timed sample of them spread over
    their lengths (the result is thrown away, so stored vectors do not change).

    The sample runs in eight length-sorted batches, as the real encode pads them, after an
    untimed warm-up call: one batch of every length padded to the longest, timed cold,
    overestimated the encode about twofold."""
    step = max(1, len(texts) // ESTIMATE_SAMPLE)
    sample = sorted(list(texts[::step][:ESTIMATE_SAMPLE]), key=len)
    encoder.encode(sample[:8], batch_size=8, dtype=np.float16)
    start = time.perf_counter()
    encoder.encode(sample, batch_size=max(1, len(sample) // 8), dtype=np.float16)
    return (time.perf_counter() - start) * len(texts) / max(1, len(sample))


def duration(seconds: float) -> str:
    """``"40 s"`` under a minute and a half, else ``"8 min"``."""
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"


def say_estimate(encoder: TextEncoder, texts: Sequence[str], what: str, *,
                 batch_size: int = 256, then: str = "", alternative: str | None = None
                 ) -> float:
    """Estimate the encode of ``texts`` and say it in one line: ``KB index: encoding <n>
    <what> (about <time> on this machine, once)<then>``, followed by ``alternative`` when the
    encode takes :data:`LONG_ENCODE_S` or more. Returns the estimate (seconds)."""
    seconds = estimate_seconds(encoder, texts, batch_size)
    line = f"KB index: encoding {len(texts):,} {what} (about {duration(seconds)} on this " \
           f"machine, once){then}"
    if alternative and seconds >= LONG_ENCODE_S:
        line += f"; {alternative}"
    say(line)
    return seconds
