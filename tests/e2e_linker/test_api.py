"""The Python API (``e2e_linker.api``): ``Linker.load`` over a tiny model directory, mentions
with exact string offsets (non-ASCII too), streaming ``pipe``, ``normalize`` of given mentions,
and the same results as ``linker annotate``."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

import e2e_linker
from data_tools.documents import Annotation, Document, Passage
from e2e_linker.api import Linker, Mention, concept_name_in
from e2e_linker.errors import UserError
from tests.helpers.synthetic import CHEMICALS, DISEASES
from tests.helpers.tiny import tiny_encoder_dir
from tests.helpers.tiny_linker import tiny_linker_dir

ROOT = Path(e2e_linker.__file__).resolve().parents[1]
TEXTS = ["Aspirin caused a headache.",
         "Ibuprofen (ä ß é) and nausea; αβ-blocker 🙂 with aspirin and café headache.",
         "Nothing here."]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("api")
    directory, kb_file = tiny_linker_dir(root / "tiny")
    return directory, kb_file, root


@pytest.fixture(scope="module")
def linker(tiny):
    directory, kb_file, root = tiny
    return Linker.load(directory, cache_dir=str(root / "cache"), index_kind="exact",
                       normalizer_model=str(tiny_encoder_dir(root / "norm")),
                       kb=f"tsv:{kb_file}")


def test_the_facade_exports_linker_and_mention_without_loading_torch():
    assert e2e_linker.Linker is Linker and e2e_linker.Mention is Mention
    code = ("import sys, json; from e2e_linker import Linker, Mention; "
            "print(json.dumps('torch' in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120, cwd=ROOT)
    assert json.loads(out.stdout) is False


def test_call_gives_frozen_mentions_with_exact_offsets_on_non_ascii_text(linker):
    for text in TEXTS[:2]:
        mentions = linker(text)
        assert mentions, text  # threshold 0: every valid span is a candidate
        for m in mentions:
            assert text[m.start:m.end] == m.text
            assert m.type in {"Chemical", "Disease"}
            assert m.mention_score is not None and m.link_score is not None
        assert [m.start for m in mentions] == sorted(m.start for m in mentions)
    # spans past the emoji and the Greek letters are still where they belong
    late = [m for m in linker(TEXTS[1]) if m.start > TEXTS[1].index("🙂")]
    assert late and all(TEXTS[1][m.start:m.end] == m.text for m in late)
    with pytest.raises(dataclasses.FrozenInstanceError):
        mentions[0].start = 1  # type: ignore[misc]


def test_concept_names_come_from_the_kb(linker):
    names = {cid: n[0] for table in (CHEMICALS, DISEASES) for cid, n in table.items()}
    linked = [m for text in TEXTS for m in linker(text) if m.concept_id]
    assert linked
    for m in linked:
        assert m.concept_name == names[m.concept_id]
        assert linker.concept_name(m.concept_id) == names[m.concept_id]
    assert concept_name_in(linker.kb, "NOPE") is None
    assert concept_name_in(None, "C001") is None and concept_name_in(linker.kb, None) is None


def test_pipe_streams_in_order_and_matches_single_calls(linker):
    consumed = []

    def texts():
        for text in TEXTS * 2:
            consumed.append(text)
            yield text

    results = linker.pipe(texts(), batch_size=2)
    assert consumed == []  # lazy: nothing read before the first result is asked for
    first = next(results)
    assert len(consumed) == 2  # one batch read, not the whole stream
    rest = list(results)
    assert [first, *rest] == [linker(t) for t in TEXTS * 2]


def test_pipe_takes_documents_and_leaves_them_untouched(linker):
    gold = Annotation(start=0, end=7, text="Aspirin", type="Chemical", concept_ids=["C001"])
    doc = Document(id="d1", passages=[Passage(offset=0, text="Aspirin caused a headache."),
                                      Passage(offset=27, text="Then nausea.",
                                              annotations=[])])
    doc.passages[0].annotations.append(gold)
    [mentions] = list(linker.pipe([doc]))
    assert doc.annotations == [gold]  # the input keeps its own annotations only
    assert mentions and all(doc.text_at(m.start, m.end) == m.text for m in mentions)
    assert any(m.start >= 27 for m in mentions)  # document-level offsets into passage 2
    with pytest.raises(UserError, match="str or a Document"):
        list(linker.pipe([42]))  # type: ignore[list-item]
    with pytest.raises(UserError, match="batch_size"):
        list(linker.pipe(TEXTS, batch_size=0))


def test_the_same_mentions_as_linker_annotate(tiny, linker, tmp_path, monkeypatch):
    from click.testing import CliRunner

    from e2e_linker.cli import main

    directory, kb_file, root = tiny
    monkeypatch.setenv("E2E_LINKER_CACHE", str(root / "cache"))
    (tmp_path / "t.txt").write_text(TEXTS[1], encoding="utf-8")
    result = CliRunner().invoke(main, ["annotate", str(tmp_path / "t.txt"), "-o", "-",
                                       "--model", str(directory), "--index", "exact",
                                       "--kb", f"tsv:{kb_file}"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["start"], r["end"], r["text"], r["type"], r["concept_id"]) for r in rows] == \
        [(m.start, m.end, m.text, m.type, m.concept_id) for m in linker(TEXTS[1])]


def test_normalize_links_given_mentions_in_order(linker):
    results = linker.normalize([("aspirin", "Chemical"), ("nausea", "Disease"), "headache"])
    assert [(m.text, m.type, m.start, m.end) for m in results] == [
        ("aspirin", "Chemical", 0, 7), ("nausea", "Disease", 0, 6), ("headache", "", 0, 8)]
    # exact KB names: the lexical sieve links them whatever the random encoder does
    assert [m.concept_id for m in results] == ["C001", "D002", "D001"]
    assert [m.concept_name for m in results] == ["aspirin", "nausea", "headache"]
    assert all(m.mention_score is None for m in results)
    # every answer says how likely it is right (exact names: very)
    assert all(0.9 < m.confidence <= 1.0 for m in results)
    assert linker.normalize([]) == []


def test_text_linking_links_the_detected_spans_with_the_normalizer(tiny):
    directory, kb_file, root = tiny
    by_text = Linker.load(directory, cache_dir=str(root / "cache"), index_kind="exact",
                          normalizer_model=str(tiny_encoder_dir(root / "norm")),
                          kb=f"tsv:{kb_file}", linking="text")
    assert by_text.annotator.linker.text_linker is by_text.normalizer
    mentions = by_text(TEXTS[1])
    assert mentions
    # the same engine on the same texts, one mention at a time (no abbreviations here)
    alone = by_text.normalize([(m.text, m.type) for m in mentions])
    assert [m.concept_id for m in mentions] == [m.concept_id for m in alone]
    with pytest.raises(UserError, match="linking"):
        Linker.load(directory, cache_dir=str(root / "cache"), index_kind="exact",
                    kb=f"tsv:{kb_file}", linking="bm25")


# ---- misuse is named, never silently wrong (issue 28) ---------------------------------------

def test_pipe_refuses_a_string_at_once_instead_of_annotating_its_characters(linker):
    with pytest.raises(UserError, match=r"a str is one text: pass \[text\]"):
        linker.pipe("Aspirin caused a headache.")  # raised by the call, not by the first next()
    with pytest.raises(UserError, match=r"pass \[document\]"):
        linker.pipe(Document(id="d", passages=[Passage(offset=0, text="Aspirin.")]))
    with pytest.raises(UserError, match="an iterable of texts or Documents, not int"):
        linker.pipe(42)  # type: ignore[arg-type]


def test_pipe_names_the_position_of_a_bad_item_across_batches(linker):
    results = linker.pipe(["Aspirin.", "Nausea.", "Headache.", None], batch_size=2)
    assert [type(next(results)) for _ in range(2)] == [list, list]  # the first batch is fine
    with pytest.raises(UserError, match="pipe item 3: expected a str or a Document, not "
                                        "NoneType"):
        next(results)


def test_pipe_names_the_item_the_annotator_fails_on(linker, monkeypatch):
    from e2e_linker.errors import DocumentFailed

    annotate = linker.annotator.annotate

    def fragile(docs, replace=False):
        if any("BOOM" in d.text for d in docs):
            raise RuntimeError("cannot handle BOOM")
        return annotate(docs, replace=replace)

    monkeypatch.setattr(linker.annotator, "annotate", fragile)
    with pytest.raises(DocumentFailed, match=r"pipe item 4 \(document text-4\): RuntimeError: "
                                             "cannot handle BOOM") as caught:
        list(linker.pipe(["a", "b", "c", "d", "BOOM here", "e"], batch_size=3))
    assert isinstance(caught.value.__cause__, RuntimeError)


def test_normalize_takes_untyped_mentions_in_every_spelling(linker):
    results = linker.normalize([("aspirin",), ("nausea", None), "headache", ["aspirin", ""]])
    assert [(m.text, m.type, m.concept_id) for m in results] == [
        ("aspirin", "", "C001"), ("nausea", "", "D002"), ("headache", "", "D001"),
        ("aspirin", "", "C001")]


@pytest.mark.parametrize("items,message", [
    ("tamoxifen", r"a str is one mention: pass \[text\] or \[\(text, type\)\]"),
    ([("aspirin", "Chemical"), ("a", "b", "c", "d")],
     r"normalize item 1: expected a text, a \(text, type\) pair or a \(text, type, species\) "
     r"triple, not \('a', 'b', 'c', 'd'\)"),
    ([("aspirin", "Chemical"), "nausea", ()], r"normalize item 2: expected a text, a"),
    ([42], "normalize item 0: expected a text, a .*triple, not 42"),
    ([("BRCA1", "Gene", 9606)], r"normalize item 0: the species must be a str \(or None\)"),
    ([(42, "Chemical")], "normalize item 0: the text must be a str, not int"),
    (["aspirin", "  "], "normalize item 1: the text is empty"),
    ([("aspirin", 7)], r"normalize item 0: the type must be a str \(or None\), not int"),
])
def test_normalize_names_a_bad_item_before_loading_anything(tiny, items, message):
    directory, kb_file, root = tiny
    fresh = Linker.load(directory, cache_dir=str(root / "cache"), index_kind="exact",
                        kb=f"tsv:{kb_file}", normalizer_model=str(root / "no-such-model"))
    with pytest.raises(UserError, match=message):
        fresh.normalize(items)


@pytest.fixture(scope="module")
def gene_linker(tmp_path_factory):
    """A tiny linker whose KB holds human and mouse genes, linked by name (:mod:`gene_kb`)."""
    from tests.helpers.gene_kb import gene_linker

    return gene_linker(tmp_path_factory.mktemp("genes"))


def test_normalize_links_genes_by_name_with_their_species_and_the_record(gene_linker):
    from tests.helpers.gene_kb import HUMAN, MOUSE

    results = gene_linker.normalize([("BRCA1", "Gene"), ("BRCA1", "Gene", "mouse"),
                                     ("IL-6", "Gene"), ("tamoxifen", "Chemical"),
                                     ("mouse", "Species"), ("ZZZ9", "Gene")])
    assert [(m.concept_id, m.concept_name, m.species, m.species_name) for m in results] == [
        ("NCBIGene:672", "BRCA1", HUMAN, "Homo sapiens"),
        ("NCBIGene:12189", "Brca1", MOUSE, "Mus musculus"),
        ("NCBIGene:3569", "IL6", HUMAN, "Homo sapiens"),
        ("MESH:D013629", "Tamoxifen", None, None),
        (MOUSE, "Mus musculus", None, None),
        (None, None, None, None)]  # no gene of that name: no match
    assert [m.link_score is None for m in results] == [True] * 3 + [False] + [True] * 2
    # the call's species stands for every item without one
    assert [m.concept_id for m in gene_linker.normalize(["x", ("BRCA1", "Gene")],
                                                        species="10090")][1:] == \
        ["NCBIGene:12189"]
    with pytest.raises(UserError, match="unknown species 'martian'"):
        gene_linker.normalize([("BRCA1", "Gene", "martian")])


def test_normalize_answers_no_match_below_the_threshold(gene_linker):
    [linked] = gene_linker.normalize([("qzxv blorft", "Disease")], nil_threshold=0)
    assert linked.concept_id is not None and linked.link_score < 0.999
    [nil] = gene_linker.normalize([("qzxv blorft", "Disease")], nil_threshold=0.999)
    assert nil.concept_id is None and nil.concept_name is None
    assert nil.link_score == pytest.approx(linked.link_score)  # what the best link scored
    for bad in (1.5, -0.1, "0.5"):
        with pytest.raises(UserError, match="between 0 and 1"):
            gene_linker.normalize(["aspirin"], nil_threshold=bad)
    with pytest.raises(UserError, match="species must be a str"):
        gene_linker.normalize(["aspirin"], species=9606)


def test_the_normalizers_first_load_is_announced_only_to_a_watcher(tiny, capsys, monkeypatch):
    directory, kb_file, root = tiny
    for verbose, announced in (("1", True), ("", False)):
        monkeypatch.setenv("E2E_LINKER_VERBOSE", verbose)
        fresh = Linker.load(directory, cache_dir=str(root / "cache"), index_kind="exact",
                            normalizer_model=str(tiny_encoder_dir(root / "norm")),
                            kb=f"tsv:{kb_file}")
        capsys.readouterr()
        fresh.normalize(["aspirin"])
        first = capsys.readouterr().err
        fresh.normalize(["aspirin"])
        assert ("loading the normalizer" in first) is announced, first
        assert first.count("loading the normalizer") <= 1
        assert "loading the normalizer" not in capsys.readouterr().err  # loaded once


def test_mentions_carry_the_linkers_record_as_linker_annotate_writes_it(tiny, tmp_path,
                                                                         monkeypatch):
    """With a KB of the real sources: namespaced IDs (``MESH:D…``, ``NCBIGene:…``), names and
    a gene's species, the same in the Python API, ``linker annotate``'s JSON Lines and its
    BioC; ``concept_name`` answers a namespaced ID too."""
    from click.testing import CliRunner

    from data_tools.formats import read_documents
    from e2e_linker.cli import main
    from tests.helpers.namespaced_kb import RAT, RAT_NAME, namespaced_kb_spec

    directory, _, root = tiny
    spec = namespaced_kb_spec(tmp_path)
    namespaced = Linker.load(directory, cache_dir=str(root / "cache"), index_kind="exact",
                             kb=spec)
    mentions = [m for text in TEXTS for m in namespaced(text)]
    assert all(m.concept_id.startswith(("MESH:", "NCBIGene:", "NCBITaxon:")) for m in mentions)
    genes = [m for m in mentions if m.concept_id.startswith("NCBIGene:")]
    assert genes and all((m.species, m.species_name) == (RAT, RAT_NAME) for m in genes)
    assert all(m.species is None for m in mentions if m not in genes)
    assert all(m.concept_name == namespaced.concept_name(m.concept_id) for m in mentions)
    assert namespaced.concept_name("MESH:D001241") == "aspirin"

    monkeypatch.setenv("E2E_LINKER_CACHE", str(root / "cache"))
    (tmp_path / "t.txt").write_text("\n".join(TEXTS), encoding="utf-8")
    base = ["annotate", str(tmp_path / "t.txt"), "--lines", "--model", str(directory),
            "--index", "exact", "--kb", spec]
    result = CliRunner().invoke(main, [*base, "-o", "-"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["concept_id"], r.get("concept_name"), r.get("species"), r.get("species_name"))
            for r in rows] == \
        [(m.concept_id, m.concept_name, m.species, m.species_name) for m in mentions]
    result = CliRunner().invoke(main, [*base, "-o", str(tmp_path / "out.xml")])
    assert result.exit_code == 0, result.output
    infons = [a.infons for d in read_documents(tmp_path / "out.xml") for a in d.annotations]
    assert [(i["identifier"], i.get("species"), i.get("species_name")) for i in infons] == \
        [(m.concept_id, m.species, m.species_name) for m in mentions]


@pytest.mark.parametrize("options, words", [
    ({"threshold": 2}, ["threshold=2", "0 to 1"]),
    ({"threshold": -0.1}, ["threshold=-0.1", "0 to 1"]),
    ({"threshold": "0.5"}, ["threshold='0.5'"]),
    ({"treshold": 0.5}, ["unknown option treshold", "threshold", "kb", "device"]),
    ({"device": "gpu"}, ["device='gpu'", "cpu, cuda"]),
    ({"index_kind": "flat"}, ["index_kind='flat'", "exact", "packed"]),
    ({"precision": "fp16"}, ["precision='fp16'", "bf16"]),
    ({"batch_size": 0}, ["batch_size"]),
    ({"max_span_len": 0}, ["max_span_len"]),
    ({"kb_memory_budget_mb": 0}, ["kb_memory_budget_mb=0", "above 0"]),
    ({"mode": "fast"}, ["mode", "per-mention"]),
])
def test_load_refuses_unknown_and_out_of_range_options_before_loading(monkeypatch, options,
                                                                      words):
    import e2e_linker.collective.loading as loading

    def never(*args, **kwargs):
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(loading, "load_annotator", never)
    with pytest.raises(UserError) as refused:
        Linker.load(**options)
    message = str(refused.value)
    assert "\n" not in message
    for word in words:
        assert word in message, (word, message)


def test_load_checks_a_settings_value_too_and_takes_the_bounds(monkeypatch):
    import e2e_linker.collective.loading as loading
    from e2e_linker.collective.settings import AnnotateSettings

    loaded = []
    monkeypatch.setattr(loading, "load_annotator", lambda settings, text_linker=None:
                        loaded.append(settings))
    with pytest.raises(UserError, match="0 to 1"):
        Linker.load(settings=AnnotateSettings(threshold=1.5))
    for threshold in (0, 0.0, 1, 1.0, None):  # the bounds are in range
        Linker.load(threshold=threshold, device="cpu")
    assert [s.threshold for s in loaded] == [0, 0.0, 1, 1.0, None]


def test_every_mention_has_a_confidence_as_linker_annotate_writes_it(tiny, linker, tmp_path,
                                                                      monkeypatch):
    """A model without confidence.json: the confidence is the mention score (to 4 places),
    filled on every mention, the same in JSON Lines and BioC."""
    from click.testing import CliRunner

    from data_tools.formats import read_documents
    from e2e_linker.cli import main

    directory, kb_file, root = tiny
    mentions = [m for text in TEXTS for m in linker(text)]
    assert mentions and all(0.0 <= m.confidence <= 1.0 for m in mentions)
    assert [m.confidence for m in mentions] == [round(m.mention_score, 4) for m in mentions]
    monkeypatch.setenv("E2E_LINKER_CACHE", str(root / "cache"))
    (tmp_path / "t.txt").write_text("\n".join(TEXTS), encoding="utf-8")
    base = ["annotate", str(tmp_path / "t.txt"), "--lines", "--model", str(directory),
            "--index", "exact", "--kb", f"tsv:{kb_file}"]
    result = CliRunner().invoke(main, [*base, "-o", "-"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["confidence"] for r in rows] == [m.confidence for m in mentions]
    result = CliRunner().invoke(main, [*base, "-o", str(tmp_path / "out.xml")])
    assert result.exit_code == 0, result.output
    assert [float(a.infons["confidence"]) for d in read_documents(tmp_path / "out.xml")
            for a in d.annotations] == [m.confidence for m in mentions]


def test_a_fitted_confidence_file_is_read_when_the_model_loads(tiny, tmp_path):
    from e2e_linker.collective.confidence import CONFIDENCE_FILE, ConfidenceModel

    _, kb_file, root = tiny
    directory, _ = tiny_linker_dir(tmp_path / "fitted")
    fitted = ConfidenceModel(weights={"mention_logit": 0.0, "type=Chemical": 2.0}, bias=-1.0,
                             types=("Chemical",))
    (directory / CONFIDENCE_FILE).write_text(json.dumps(fitted.to_json()))
    loaded = Linker.load(directory, cache_dir=str(root / "cache"), index_kind="exact",
                         kb=f"tsv:{kb_file}")
    mentions = loaded(TEXTS[1])
    assert {m.type for m in mentions} == {"Chemical", "Disease"}
    # sigmoid(-1 + 2) for chemicals, sigmoid(-1) for the rest, whatever the mention score
    assert {(m.type, m.confidence) for m in mentions} == {("Chemical", 0.7311),
                                                          ("Disease", 0.2689)}
