"""The registry: dataset definitions (real splits, the held-out NCBI test, a MedMentions-format
fixture), KB specs and corpus specs."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from data_tools.documents import Annotation, Document, FormatError, Passage
from data_tools.formats import read_documents, write_documents
from data_tools.kb import KB
from data_tools.registry import (
    BIORED_TYPE_MAP,
    DATASETS,
    GENE_CORPUS_TYPE_MAP,
    IGNORE_TYPE,
    ORIGINAL_TYPE,
    TAXON_INFON,
    OffsetRepairs,
    apply_type_map,
    get_dataset,
    in_dev_fold,
    load_corpus,
    load_kb,
    normalize_corpus_ids,
    repair_offsets,
)


def test_bc5cdr_splits_exist():
    for split in ("train", "dev", "test"):
        for name in ("bc5cdr", "bc5cdr-bioc"):
            assert get_dataset(name, split).path.is_file()


def test_ncbi_test_is_held_out():
    assert get_dataset("ncbi_disease", "dev").path.is_file()
    with pytest.raises(FormatError, match="held out"):
        get_dataset("ncbi_disease", "test")


def test_medmentions_format_on_a_fixture(tmp_path, monkeypatch):
    root = tmp_path / "medmentions"
    (root / "st21pv" / "data").mkdir(parents=True)
    (root / "full" / "data").mkdir(parents=True)
    corpus = ("25763772|t|DCTN4 as a modifier of chronic Pseudomonas aeruginosa infection\n"
              "25763772|a|Pseudomonas aeruginosa (Pa) infection in cystic fibrosis.\n"
              "25763772\t0\t5\tDCTN4\tT116,T123\tC4308010\n"
              "25763772\t23\t63\tchronic Pseudomonas aeruginosa infection\tT047\tC0854135\n\n"
              "99999999|t|Other.\n99999999|a|Text.\n\n")
    with gzip.open(root / "st21pv" / "data" / "corpus_pubtator.txt.gz", "wt") as handle:
        handle.write(corpus)
    (root / "full" / "data" / "corpus_pubtator_pmids_test.txt").write_text("25763772\n")
    monkeypatch.setenv("E2E_LINKER_DATA", str(tmp_path))
    docs = list(get_dataset("medmentions_st21pv", "test").documents())
    assert [d.id for d in docs] == ["25763772"]
    assert docs[0].annotations[1].concept_ids == ["C0854135"]
    assert docs[0].annotations[0].type == "T116,T123"


def test_missing_medmentions_text_is_explained(tmp_path, monkeypatch):
    monkeypatch.setenv("E2E_LINKER_DATA", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="not available"):
        list(get_dataset("medmentions_st21pv", "train").documents())


def test_unknown_split():
    with pytest.raises(FormatError, match="unknown dataset"):
        get_dataset("bc5cdr", "validation")


def _tsv(path, rows):
    path.write_text("".join(f"{cid}\t{name}\n" for cid, name in rows))
    return path


@pytest.mark.parametrize("spec", ["nonsense", "tsv", "csv:kb.tsv", "+bc5cdr", ":kb.tsv"])
def test_bad_kb_specs_name_the_part_and_the_choices(spec):
    with pytest.raises(FormatError, match="unknown KB spec part") as info:
        load_kb(spec)
    assert "bc5cdr" in str(info.value) and "tsv" in str(info.value)  # the choices are listed


def test_a_missing_kb_file_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_kb(f"tsv:{tmp_path / 'absent.tsv'}")


def test_kb_spec_parts_merge_in_order(tmp_path):
    first = _tsv(tmp_path / "a.tsv", [("X1", "foo"), ("X2", "bar")])
    second = _tsv(tmp_path / "b.tsv", [("X2", "baz"), ("X3", "qux")])
    kb = load_kb(f"tsv:{first} + tsv:{second}")
    assert [c.id for c in kb] == ["X1", "X2", "X3"]
    assert kb.get("X2").all_names() == ["bar", "baz"]  # the later part merges into the earlier
    assert len(load_kb(f"tsv:{second}")) == 2


def test_load_corpus_reads_a_path_in_order_up_to_the_limit(tmp_path):
    docs = [Document(str(n), [Passage(0, f"Title {n}.", {"type": "title"})]) for n in range(5)]
    path = tmp_path / "corpus.txt"
    write_documents(docs, path, "pubtator")
    assert [d.id for d in load_corpus(str(path))] == ["0", "1", "2", "3", "4"]
    assert [d.id for d in load_corpus(str(path), limit=2)] == ["0", "1"]
    # a path holding a colon is a path, not a dataset split
    odd = tmp_path / "bc5cdr:dev"
    write_documents(docs[:1], odd, "pubtator")
    assert [d.id for d in load_corpus(str(odd))] == ["0"]


def test_load_corpus_reads_a_dataset_split_with_a_limit(shared_data):
    dev = shared_data / "bc5cdr" / "CDR_DevelopmentSet.PubTator.txt"
    first = [d for _, d in zip(range(3), read_documents(dev), strict=False)]
    docs = load_corpus("bc5cdr:dev", limit=3)
    assert [d.id for d in docs] == [d.id for d in first] and len(docs) == 3
    assert docs[0].text == first[0].text
    assert [a.concept_ids for a in docs[0].annotations] == \
        [a.concept_ids for a in first[0].annotations]
    with pytest.raises(FormatError, match="unknown dataset"):
        load_corpus("bc5cdr:validation")


# ---- gene corpora and BioRED ---------------------------------------------------------------

@pytest.mark.parametrize("name, split, docs, repaired, dropped", [
    ("gnormplus", "train", 424, 34, 1),
    ("gnormplus", "test", 262, 2, 2),
    ("nlmgene", "train", 409, 11, 0),
    ("nlmgene", "test", 91, 0, 0),
    ("biored", "dev", 64, 0, 0),
])
def test_gene_and_biored_splits_load_with_repaired_offsets(name, split, docs, repaired, dropped,
                                                           caplog):
    dataset = get_dataset(name, split)
    assert name in DATASETS and dataset.path.is_file()
    assert dataset.offset_repairs is None  # counted by a full pass
    loaded = list(dataset.documents())
    assert len(loaded) == docs
    assert dataset.offset_repairs == OffsetRepairs(repaired, dropped)
    for doc in loaded:  # every mention now matches the text at its offsets
        for ann in doc.annotations:
            assert doc.text_at(ann.start, ann.end) == ann.text
            assert all(cid and "," not in cid and ";" not in cid and "(" not in cid
                       for cid in ann.concept_ids)
    caplog.clear()
    list(dataset.documents())
    assert not [r for r in caplog.records if "did not match" in r.message]  # logged once
    assert dataset.offset_repairs == OffsetRepairs(repaired, dropped)


def test_gene_split_definitions():
    gnp = get_dataset("gnormplus", "train")
    assert gnp.entity_types == gnp.annotated_types == ["Gene"] and gnp.kb_spec == "genes"
    assert gnp.type_map == GENE_CORPUS_TYPE_MAP and gnp.type_map["FamilyName"] is None
    assert get_dataset("nlmgene", "test").path.name == "NLMgene_Test.PubTator"
    biored = get_dataset("biored", "dev")
    assert biored.annotated_types == ["Chemical", "Disease", "Gene"]
    assert biored.kb_spec == "bc5cdr_genes" and biored.type_map == BIORED_TYPE_MAP
    assert get_dataset("bc5cdr", "dev").type_map == {}  # already our types
    assert get_dataset("biored", "train").path.name == "Train.PubTator"
    with pytest.raises(FormatError, match="a train and a dev split"):
        get_dataset("biored", "test")
    with pytest.raises(FormatError, match="gnormplus, nlmgene train/fit/dev/test"):
        get_dataset("gnormplus", "validation")


@pytest.mark.parametrize("name", ["gnormplus", "s800"])
def test_dev_fold_and_fit_split_the_training_file(name):
    """A training-file-only corpus's ``dev`` fold and ``fit`` rest partition its ``train``
    split, by document ID alone (so the fold is the same whatever else is read)."""
    whole = [d.id for d in get_dataset(name, "train").documents()]
    dev = [d.id for d in get_dataset(name, "dev").documents()]
    fit = [d.id for d in get_dataset(name, "fit").documents()]
    assert sorted(dev + fit) == sorted(whole) and not set(dev) & set(fit)
    assert len(whole) / 8 < len(dev) < len(whole) / 3
    assert all(in_dev_fold(d) for d in dev) and not any(in_dev_fold(f) for f in fit)


def test_gene_ids_are_split_and_species_kept():
    docs = {d.id: d for d in get_dataset("nlmgene", "test").documents()}
    many = [a for d in docs.values() for a in d.annotations if a.infons.get("pubtator_id")
            == "373985,83453,91851;25884,419054,69121"]
    assert many and many[0].concept_ids == ["373985", "83453", "91851", "25884", "419054",
                                            "69121"]
    gnp = [a for d in get_dataset("gnormplus", "train").documents() for a in d.annotations]
    mouse = [a for a in gnp if a.infons.get("pubtator_id") == "50509,12831(Tax:10090)"]
    assert mouse and mouse[0].concept_ids == ["50509", "12831"]
    assert mouse[0].infons[TAXON_INFON] == "10090"
    assert sum(a.infons.get(TAXON_INFON) == "10090" for a in gnp) > 50


def _doc(text: str, *anns: Annotation) -> Document:
    title, _, abstract = text.partition("\n")
    doc = Document("1", [Passage(0, title, {"type": "title"}),
                         Passage(len(title) + 1, abstract, {"type": "abstract"})])
    for ann in anns:
        doc.add_annotation(ann)
    return doc


def test_normalize_corpus_ids_on_a_fixture():
    doc = _doc("Title.\nAbstract text here.",
               Annotation(0, 5, "Title", "Gene", ["50509,12831(Tax:10090)"]),
               Annotation(7, 15, "Abstract", "Gene", ["1;2,1"]),
               Annotation(16, 20, "text", "ChemicalEntity", ["-"]),
               Annotation(21, 25, "here", "Gene", ["7157"]))
    normalize_corpus_ids(doc)
    anns = doc.annotations
    assert anns[0].concept_ids == ["50509", "12831"] and anns[0].infons[TAXON_INFON] == "10090"
    assert anns[1].concept_ids == ["1", "2"] and anns[1].infons["pubtator_id"] == "1;2,1"
    assert anns[2].concept_ids == [] and anns[2].concept_id == "-1"
    assert anns[3].concept_ids == ["7157"] and anns[3].infons == {}


def test_repair_offsets_rules():
    text = "Ge-1 binds.\nThe Ge-1 protein and Intersex; a TATA box; Ge-1 again."
    mismatch = "text_mismatch"
    shifted = Annotation(17, 21, "Ge-1", "Gene", infons={mismatch: "e-1 "})  # off by one
    cased = Annotation(33, 41, "intersex", "Gene", infons={mismatch: "Intersex"})
    short = Annotation(16, 20, "Ge-1 protein", "Gene", infons={mismatch: "Ge-1"})  # end cut
    lost = Annotation(45, 55, '"TATA" box', "DomainMotif", infons={mismatch: "TATA box; "})
    good = Annotation(0, 4, "Ge-1", "Gene")
    doc = _doc(text, good, shifted, cased, short, lost)
    assert repair_offsets(doc) == OffsetRepairs(repaired=3, dropped=1)
    assert [(a.start, a.end, a.text) for a in doc.annotations] == [
        (0, 4, "Ge-1"), (16, 20, "Ge-1"), (33, 41, "Intersex"), (16, 28, "Ge-1 protein")]
    for ann in doc.annotations:
        assert doc.text_at(ann.start, ann.end) == ann.text and mismatch not in ann.infons
    far = _doc(text, Annotation(0, 5, "again", "Gene", infons={mismatch: "Ge-1 "}))
    assert repair_offsets(far, max_shift=20) == OffsetRepairs(0, 1)  # 'again' is 56 away
    across = _doc(text, Annotation(5, 9, "Ge-1", "Gene", infons={mismatch: "bind"}))
    assert repair_offsets(across) == OffsetRepairs(1, 0)  # nearest 'Ge-1' is at 0, in the title
    assert [(a.start, p.type) for p, a in across.iter_annotations()] == [(0, "title")]


def _typed_doc() -> Document:
    return _doc("Title.\nTP53 kinase family and aspirin.",
                Annotation(7, 11, "TP53", "GeneOrGeneProduct", ["7157"]),
                Annotation(12, 25, "kinase family", "FamilyName"),
                Annotation(30, 37, "aspirin", "ChemicalEntity", ["D001241"]),
                Annotation(0, 5, "Title", "Other"))


def test_apply_type_map_for_evaluation_removes_ignored_types():
    docs = [_typed_doc()]
    type_map = {"GeneOrGeneProduct": "Gene", "FamilyName": None, "ChemicalEntity": "Chemical"}
    counts = apply_type_map(docs, type_map)
    assert counts == {"mapped": 2, "ignored": 1, "unmapped": 1}
    assert [(a.text, a.type) for a in docs[0].annotations] == [
        ("Title", "Other"), ("TP53", "Gene"), ("aspirin", "Chemical")]
    assert docs[0].annotations[1].infons[ORIGINAL_TYPE] == "GeneOrGeneProduct"


def test_apply_type_map_for_training_keeps_ignored_spans_marked():
    docs = [_typed_doc()]
    counts = apply_type_map(docs, GENE_CORPUS_TYPE_MAP | {"GeneOrGeneProduct": "Gene"},
                            keep_ignored=True)
    assert counts == {"mapped": 1, "ignored": 1, "unmapped": 2}
    family = docs[0].annotations[2]
    assert family.type == IGNORE_TYPE and family.infons[ORIGINAL_TYPE] == "FamilyName"
    # marked spans are ignored again by a later call (removed for evaluation)
    assert apply_type_map(docs, {"Gene": "Gene"})["ignored"] == 1
    assert IGNORE_TYPE not in {a.type for a in docs[0].annotations}
    untouched = [_typed_doc()]
    assert apply_type_map(untouched, {}) == {"mapped": 0, "ignored": 0, "unmapped": 4}
    assert [a.type for a in untouched[0].annotations] == [a.type for a in
                                                           _typed_doc().annotations]


def test_gene_corpus_type_map_on_real_data():
    docs = load_corpus("gnormplus:test")
    counts = apply_type_map(docs, get_dataset("gnormplus", "test").type_map)
    assert counts == {"mapped": 3287, "ignored": 1560, "unmapped": 0}
    assert {a.type for d in docs for a in d.annotations} == {"Gene"}


def test_existing_presets_keep_their_hashes():
    """Adding genes (and Concept.taxon) must not change what the older presets load."""
    core = load_kb("bc5cdr_core")
    assert core.content_hash() == \
        "cb7e297d43a9f511302e70d00aabc63a067b3a6e3163d2db386ba745313e982a"
    assert load_kb("medic").content_hash() == \
        "29a2d76fe41c20bc80be14878d07c9a2467f92758880a56997c5080d5752b497"
    both = load_kb("bc5cdr_core_genes")
    genes = [c for c in both if c.type == "Gene"]
    assert len(both) == len(core) + len(genes) and all(c.taxon for c in genes)
    assert KB(c for c in both if c.type != "Gene").content_hash() == core.content_hash()


def test_preset_files_name_every_file_each_preset_reads(monkeypatch):
    """The compiled KB is keyed by these files: a preset reading a file the table does not name
    would serve a stale KB after that file changed."""
    import data_tools.registry as registry
    from data_tools.kb import KB

    read: list[tuple[str, ...]] = []

    def recording_path(*parts: str):
        read.append(parts)
        return Path("/nowhere", *parts)

    monkeypatch.setattr(registry, "vocab_path", recording_path)
    for loader in ("load_medic", "load_mesh_descriptors", "load_mesh_supplementary",
                   "load_gene_info", "load_hgnc", "load_homologene", "load_species"):
        monkeypatch.setattr(registry, loader, lambda *args, **kwargs: KB())
    assert set(registry.PRESET_FILES) == set(registry.PRESETS)
    for name, build in registry.PRESETS.items():
        read.clear()
        build()
        assert set(read) == set(registry.PRESET_FILES[name]), name


def test_spec_files_lists_presets_and_loader_paths(tmp_path):
    from data_tools.registry import MEDIC, spec_files, vocab_path

    assert spec_files(f"medic + tsv:{tmp_path / 'mine.tsv'}") == [vocab_path(*MEDIC),
                                                                  tmp_path / "mine.tsv"]
    with pytest.raises(FormatError):
        spec_files("medic+nonsense")
