"""The KB a collective model links against: manifest, mined names, and the hash check."""

from __future__ import annotations

import json

import pytest

from data_tools.kb import KB, Concept
from e2e_linker.collective.model_dir import EXTRA_NAMES_FILE, MANIFEST_FILE
from e2e_linker.collective.model_kb import assemble_kb, load_model_kb, save_model_kb
from e2e_linker.errors import UserError

ROWS = ["C1\taspirin", "C2\tibuprofen", "D1\theadache"]


def _kb_file(tmp_path, rows=ROWS):
    path = tmp_path / "kb.tsv"
    path.write_text("\n".join(rows) + "\n")
    return path


def _model(tmp_path, spec: str, extra: KB | None = None):
    """A model directory holding only what ``save_model_kb`` and ``CollectiveLinker.save`` write
    about the KB (no weights: the KB side needs none)."""
    directory = tmp_path / "model"
    manifest = save_model_kb(directory, spec, extra, assemble_kb(spec, extra))
    (directory / MANIFEST_FILE).write_text(json.dumps(manifest))
    return directory, manifest


def test_manifest_records_spec_hash_and_sizes(tmp_path):
    spec = f"tsv:{_kb_file(tmp_path)}"
    extra = KB([Concept("C1", "acetylsalicylic acid", [], "", "corpus")])
    directory, manifest = _model(tmp_path, spec, extra)
    merged = assemble_kb(spec, extra)
    assert manifest == {"kb": spec, "extra_names": EXTRA_NAMES_FILE,
                        "kb_hash": merged.content_hash(), "concepts": 3, "names": 4}
    assert (directory / EXTRA_NAMES_FILE).is_file()
    _, plain = _model(tmp_path / "plain", spec)
    assert plain["extra_names"] is None and plain["names"] == 3
    assert plain["kb_hash"] != manifest["kb_hash"]


def test_load_model_kb_merges_the_mined_names(tmp_path):
    spec = f"tsv:{_kb_file(tmp_path)}"
    extra = KB([Concept("C1", "acetylsalicylic acid", [], "", "corpus")])
    directory, manifest = _model(tmp_path, spec, extra)
    kb = load_model_kb(directory, cache_dir=tmp_path / "cache")
    assert kb.content_hash() == manifest["kb_hash"]
    assert "acetylsalicylic acid" in kb.get("C1").all_names()
    assert [c.id for c in kb] == ["C1", "C2", "D1"]


def test_a_changed_kb_is_refused_unless_given_explicitly(tmp_path):
    path = _kb_file(tmp_path)
    spec = f"tsv:{path}"
    directory, _ = _model(tmp_path, spec)
    assert len(load_model_kb(directory, cache_dir=tmp_path / "cache")) == 3
    _kb_file(tmp_path, ROWS + ["D2\tnausea"])  # the KB file changes after the model was built
    with pytest.raises(UserError, match="differs from the one the model was built with"):
        load_model_kb(directory, cache_dir=tmp_path / "cache")
    # --kb: the user asks for this KB, so no hash check
    kb = load_model_kb(directory, spec, tmp_path / "cache")
    assert len(kb) == 4 and kb.get("D2").name == "nausea"


def test_a_model_without_a_kb_and_a_missing_kb_file_are_user_errors(tmp_path):
    (tmp_path / "model").mkdir()
    with pytest.raises(UserError, match="pass --kb"):
        load_model_kb(tmp_path / "model", cache_dir=tmp_path / "cache")
    with pytest.raises(UserError, match="absent.tsv"):
        load_model_kb(tmp_path / "model", f"tsv:{tmp_path / 'absent.tsv'}", tmp_path / "cache")


def test_mined_names_take_the_datasets_types():
    """A gene corpus's FamilyName / DomainMotif mentions are not mined as names."""
    from e2e_linker.collective.model_kb import mined_names

    kb = mined_names(["gnormplus:train"])
    assert {c.type for c in kb} == {"Gene"}
    assert len(kb) > 500


def test_ncbi_disease_names_are_mined_as_diseases():
    """NCBI disease's four mention classes (SpecificDisease, DiseaseClass, Modifier,
    CompositeMention) are mined as the KB's Disease: a name typed otherwise is one no Disease
    span finds by its type (the sieve stack's training pool), and a concept mined under an
    alternative ID would keep a type no model predicts."""
    from e2e_linker.collective.model_kb import mined_names

    kb = mined_names(["ncbi_disease:train"])
    assert {c.type for c in kb} == {"Disease"}
    assert len(kb) > 500


# ---- mined names carry IDs the vocabulary holds --------------------------------------------

def _vocabulary() -> KB:
    """MeSH concepts (a promoted descriptor, two sharing a name, a supplementary concept, a
    salt),
    MEDIC's OMIM alternative ID, a gene and a species."""
    return KB([Concept("D000069059", "Atorvastatin", ["Lipitor"], "Chemical", "MeSH"),
               Concept("D000077144", "Clopidogrel", [], "Chemical", "MeSH"),
               Concept("D000000001", "Shared Name", [], "Chemical", "MeSH"),
               Concept("D000000002", "Shared-name", [], "Disease", "MeSH"),
               Concept("C495469", "p-coumaric acid", [], "Chemical", "MeSH-SCR"),
               Concept("D000069348", "Quetiapine Fumarate", [], "Chemical", "MeSH"),
               Concept("D003920", "Diabetes Mellitus", [], "Disease", "MEDIC",
                       ["OMIM:222100"]),
               Concept("6657", "SOX2", ["Sox2"], "Gene", "NCBI Gene", taxon="9606"),
               Concept("NCBITaxon:3482", "Cannabis", ["cannabis"], "Species", "NCBI Taxonomy")])


def _names() -> KB:
    def name(cid, text, *synonyms, type_="Chemical"):
        return Concept(cid, text, list(synonyms), type_, "corpus")

    return KB([name("C065179", "atorvastatin", "Ato", "atorva"),  # → D000069059
               name("C055162", "CLOPIDOGREL"),  # the fold ignores case: → D000077144
               name("C000001", "shared name"),  # two MeSH concepts hold it: none
               name("C000002", "Lipitor", "clopidogrel"),  # names two concepts: none
               name("C000003", "venlafaxine"),  # no concept holds it: none
               name("D002188", "cannabis"),  # held only by a species: none (MeSH by MeSH)
               name("C032171", "p-coumaric acid"),  # → an SCR
               name("C069541", "quetiapine"),  # the base of one salt: → D000069348
               name("398000", "Sox2", type_="Gene"),  # a gene is never replaced
               name("D003920", "diabetes", type_="Disease"),  # held
               name("OMIM:222100", "IDDM", type_="Disease"),  # held as an alternative ID
               name("D000069059", "atorvastatin calcium")])  # held


def test_an_id_the_vocabulary_lacks_is_replaced_by_the_one_concept_holding_its_names():
    from e2e_linker.collective.model_kb import replacements

    assert replacements(_names(), _vocabulary()) == {
        "C065179": "D000069059", "C055162": "D000077144", "C000001": None, "C000002": None,
        "C000003": None, "D002188": None, "C032171": "C495469", "C069541": "D000069348",
        "398000": None}


def test_current_names_move_replaced_ids_names_and_drop_the_unreplaced():
    from e2e_linker.collective.model_kb import current_names

    vocabulary = _vocabulary()
    kb = current_names(_names(), vocabulary)
    assert all(c.id in vocabulary for c in kb)
    assert [c.id for c in kb] == ["D000069059", "D000077144", "C495469", "D000069348",
                                  "D003920", "OMIM:222100"]
    # the promoted concept's names join the names already mined under its current ID
    assert kb.get("D000069059").all_names() == ["atorvastatin", "Ato", "atorva",
                                                "atorvastatin calcium"]
    assert kb.get("D000069059").source == "corpus"


def _corpus(tmp_path):
    """A PubTator file: a promoted chemical, a coordination of a promoted and an unreplaced
    one (its parts mined one by one), and a held disease."""
    text = "Atorvastatin, and atorvastatin and venlafaxine, caused diabetes."
    path = tmp_path / "corpus.txt"
    path.write_text(f"1|t|{text}\n1|a|\n"
                    "1\t0\t12\tAtorvastatin\tChemical\tC065179\n"
                    "1\t18\t46\tatorvastatin and venlafaxine\tChemical\tC065179|C047426\t"
                    "atorvastatin|venlafaxine\n"
                    "1\t55\t63\tdiabetes\tDisease\tD003920\n\n")
    return path


def test_a_models_mined_names_carry_only_ids_its_vocabulary_holds(tmp_path):
    from e2e_linker.collective.model_kb import assemble_model_kb, mined_names

    vocabulary = _kb_file(tmp_path, ["D000069059\tAtorvastatin",
                                     "D003920\tDiabetes Mellitus"])
    spec = f"tsv:{vocabulary}"
    corpus = [str(_corpus(tmp_path))]
    as_written = mined_names(corpus)
    assert {c.id for c in as_written} == {"C065179", "C047426", "D003920"}
    extra, kb = assemble_model_kb(spec, corpus)
    assert [(c.id, c.all_names()) for c in extra] == [
        ("D000069059", ["Atorvastatin"]), ("D003920", ["diabetes"])]
    assert kb.content_hash() == assemble_kb(spec, extra).content_hash()
    assert kb.get("D000069059").all_names() == ["Atorvastatin"]  # "atorvastatin" folds into it
    assert "C065179" not in kb and "C047426" not in kb
    none, plain = assemble_model_kb(spec, [])
    assert none is None and plain.content_hash() == assemble_kb(spec).content_hash()


def test_the_shipped_mined_names_carry_only_ids_the_default_kb_holds():
    """Every concept ID in the default model's ``kb_extra_names.tsv`` is one its KB's
    vocabulary (MeSH, MEDIC, genes, species) holds: none that MeSH has replaced
    (``e2e_linker.collective.model_kb.current_names``)."""
    from e2e_linker.defaults import DEFAULT_MODEL_DIR
    from tests.helpers.default_vocabulary import (
        DEFAULT_SPEC,
        held,
        reads_the_default_kbs_files,
    )

    assert reads_the_default_kbs_files()
    manifest = json.loads((DEFAULT_MODEL_DIR / MANIFEST_FILE).read_text())
    assert manifest["kb"] == DEFAULT_SPEC
    ids = [c.id for c in KB.load(DEFAULT_MODEL_DIR / EXTRA_NAMES_FILE)]
    assert len(ids) > 5000
    assert [cid for cid in ids if not held(cid)] == []
    assert "D000069059" in ids and "C065179" not in ids  # atorvastatin, promoted


def test_the_shipped_mined_names_carry_only_the_models_types():
    """Every concept of the default model's ``kb_extra_names.tsv`` has a type the model
    predicts: a corpus's own class names (NCBI disease's ``SpecificDisease``) stay out of the
    KB (``data_tools.registry.NCBI_DISEASE_TYPE_MAP``)."""
    from e2e_linker.defaults import DEFAULT_MODEL_DIR

    config = json.loads((DEFAULT_MODEL_DIR / "linker_config.json").read_text())
    types = {c.type for c in KB.load(DEFAULT_MODEL_DIR / EXTRA_NAMES_FILE)}
    assert types <= set(config["types"])
    assert "Disease" in types
