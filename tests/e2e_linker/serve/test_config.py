"""``linker serve``'s options as one value (``e2e_linker.serve.config``): checked when made,
and through JSON (no pickle) to ``--workers`` processes unchanged."""

from __future__ import annotations

import pytest

from e2e_linker.collective.settings import AnnotateSettings
from e2e_linker.serve.config import ServeConfig


def test_the_options_travel_as_json_unchanged():
    config = ServeConfig(port=9000, max_batch=8, threads=3, settings=AnnotateSettings(
        threshold=0.4, types=("Chemical",), batch_size=1, cache_dir="/tmp/c",
        disable=("lexical_gate",), overrides=("propagation.threshold=0.3",)))
    assert ServeConfig.from_json(config.to_json()) == config


@pytest.mark.parametrize("bad", [{"max_batch": 0}, {"max_queue": 0}, {"max_wait_ms": -1},
                                 {"max_request_bytes": 0}, {"read_timeout_s": 0},
                                 {"threads": 0}])
def test_impossible_limits_are_refused(bad):
    with pytest.raises(ValueError):
        ServeConfig(**bad)
