"""The line before a long encode: its time measured here, and a cheaper way when it is long."""

from __future__ import annotations

import numpy as np

from e2e_linker.console import VERBOSE_ENV
from e2e_linker.kb_search import encode_estimate
from e2e_linker.kb_search.encode_estimate import (
    ESTIMATE_SAMPLE,
    duration,
    estimate_seconds,
    say_estimate,
)

CHEAPER = "`--types Disease` without `--kb` links these types against the model's own KB"


def test_the_estimate_encodes_a_sample_and_scales_it(tiny_encoder, monkeypatch):
    texts = [f"name {i} " + "x" * (i % 40) for i in range(3000)]
    seen: list[int] = []
    encode = tiny_encoder.encode

    def counted(batch, *args, **kwargs):
        seen.append(len(batch))
        return encode(batch, *args, **kwargs)

    monkeypatch.setattr(tiny_encoder, "encode", counted)
    clock = iter([10.0, 12.0])  # the timed call: 2 s for the sample
    monkeypatch.setattr(encode_estimate.time, "perf_counter", lambda: next(clock))
    seconds = estimate_seconds(tiny_encoder, texts)
    assert seen == [8, ESTIMATE_SAMPLE]  # a warm-up, then the sample: never the whole list
    assert seconds == 2.0 * len(texts) / ESTIMATE_SAMPLE


def test_durations_read_in_seconds_then_minutes():
    assert (duration(40), duration(89), duration(90), duration(740)) == \
        ("40 s", "89 s", "2 min", "12 min")


def test_a_long_encode_names_the_cheaper_way_a_short_one_does_not(tiny_encoder, monkeypatch,
                                                                   capsys):
    monkeypatch.setenv(VERBOSE_ENV, "1")  # stderr is no terminal here
    for seconds, named in ((30.0, False), (740.0, True)):
        monkeypatch.setattr(encode_estimate, "estimate_seconds", lambda *a, s=seconds, **k: s)
        say_estimate(tiny_encoder, ["a", "b"], "names not cached yet", then=" into here",
                     alternative=CHEAPER)
        line = capsys.readouterr().err.strip()
        assert line.startswith("KB index: encoding 2 names not cached yet (about "
                               f"{duration(seconds)} on this machine, once) into here")
        assert (CHEAPER in line) == named and "\n" not in line


def test_the_stores_long_encodes_say_their_estimate_and_the_alternative(tiny_encoder, tmp_path,
                                                                       monkeypatch, capsys):
    """A list's names its table lacks, and a partial list's rows: both announced in one line
    before they are encoded, with the caller's cheaper way."""
    from e2e_linker.kb_search import partial_matrix
    from e2e_linker.kb_search.cache import VectorStore

    monkeypatch.setenv(VERBOSE_ENV, "1")
    monkeypatch.setattr(encode_estimate, "estimate_seconds", lambda *a, **k: 740.0)
    store = VectorStore(tmp_path, tiny_encoder, alternative=CHEAPER)
    names = [f"compound {i}" for i in range(2 * ESTIMATE_SAMPLE + 1)]
    store.matrix(names)
    err = capsys.readouterr().err
    assert f"KB index: encoding {len(names):,} names not cached yet (about 12 min on this " \
           f"machine, once) into {store.names_folder}; an interrupted encode resumes from its " \
           f"last 32,768-name checkpoint; {CHEAPER}" in err
    monkeypatch.setattr(partial_matrix, "ANNOUNCE_TEXTS", 2)
    rows = store.partial([f"other {i}" for i in range(5)])
    rows.rows(np.arange(3))
    assert "KB index: encoding 3 names not cached yet (about 12 min on this machine, once) " \
           f"into {store.folder}; {CHEAPER}" in capsys.readouterr().err
    rows.rows(np.arange(5))  # two more: below the line
    assert "KB index: encoding" not in capsys.readouterr().err


def test_a_unit_lists_encode_says_its_estimate_too(tiny_encoder, tmp_path, monkeypatch, capsys):
    """The normalizer's texts (unit rows, in resumable parts): the same line before their
    encode, counting only the parts not written yet."""
    from e2e_linker.kb_search.cache import VectorStore

    monkeypatch.setenv(VERBOSE_ENV, "1")
    monkeypatch.setattr(encode_estimate, "estimate_seconds", lambda enc, texts, *a, **k:
                        float(len(texts)))
    store = VectorStore(tmp_path, tiny_encoder, unit=True, part_size=400, seed_min=10**9)
    texts = [f"ontology text {i}" for i in range(1000)]
    store.matrix(texts)
    assert "KB index: encoding 1,000 texts not cached yet (about 17 min on this machine, " \
           "once) into " in capsys.readouterr().err
    parts = store.list_path(texts).with_suffix(".parts")
    parts.mkdir()
    np.save(parts / "00000.npy", np.zeros((400, tiny_encoder.hidden_size), np.float16))
    store.list_path(texts).unlink()
    store.matrix(texts)  # 600 texts left: an estimate for them only
    assert "KB index: encoding 600 texts not cached yet (about 10 min" in capsys.readouterr().err
