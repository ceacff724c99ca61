"""Loading an annotator: with the compiled KB, outputs are those of the KB built from its files."""

from __future__ import annotations

import json

from click.testing import CliRunner

from e2e_linker.cli import main
from e2e_linker.compiled_kb.store import BYPASS_ENV, list_compiled
from e2e_linker.console import VERBOSE_ENV
from tests.helpers.synthetic import synthetic_docs
from tests.helpers.tiny_linker import tiny_linker_dir

TEXT = ("Aspirin and acetylsalicylic acid caused headache, cephalalgia and nausea; "
        "ibuprofen (IBU) and IBU-induced renal failure. Kidney failure after cisplatin.\n")


def _annotate(directory, cache, *args, input=None):
    return CliRunner().invoke(main, ["annotate", *map(str, args), "--model", str(directory),
                                     "--index", "exact", "--cache-dir", str(cache)],
                              input=input)


def test_annotate_output_is_the_same_with_the_compiled_kb_and_without(tmp_path, monkeypatch):
    from data_tools.formats import write_documents

    directory, _ = tiny_linker_dir(tmp_path / "linker", filler_concepts=50)
    write_documents(synthetic_docs(6), tmp_path / "in.xml")
    cache = tmp_path / "cache"
    outputs = {}
    monkeypatch.setenv(VERBOSE_ENV, "1")  # the compile's progress lines: -v without a terminal
    for run in ("compiling", "compiled", "bypassed"):
        if run == "bypassed":
            monkeypatch.setenv(BYPASS_ENV, "off")
        text = _annotate(directory, cache, "-", "-o", "-", input=TEXT)
        corpus = _annotate(directory, cache, tmp_path / "in.xml", "-o", "-", "--format",
                           "jsonl")
        assert text.exit_code == 0 and corpus.exit_code == 0, text.output + corpus.output
        outputs[run] = (text.stdout, corpus.stdout)
        if run == "compiling":
            assert "compiling KB" in text.stderr
            assert [c["state"] for c in list_compiled(cache)] == ["ok"]
        else:
            assert "compiling KB" not in text.stderr
    assert outputs["compiling"][0].strip() and outputs["compiling"][1].strip()
    assert outputs["compiling"] == outputs["compiled"] == outputs["bypassed"]


def test_a_name_only_type_is_neither_encoded_nor_dense_linked(tmp_path):
    """``--lexical-types Disease``: the index holds no disease name, and no span is linked
    to a disease by dense search (without the option, some are)."""
    from data_tools.documents import Document, Passage
    from e2e_linker.collective.loading import load_annotator
    from e2e_linker.collective.settings import AnnotateSettings

    directory, _ = tiny_linker_dir(tmp_path / "linker", typed=True)
    docs = [Document("t", [Passage(0, TEXT, {})])] + synthetic_docs(6)

    def dense_diseases(**options):
        annotator = load_annotator(AnnotateSettings(
            model_dir=str(directory), cache_dir=str(tmp_path / "cache"), index_kind="exact",
            **options))
        found = [a for d in annotator.annotate(docs, replace=True) for a in d.annotations
                 if a.infons["link_method"] == "dense"
                 and annotator.kb.concepts[a.concept_ids[0]].type == "Disease"]
        return annotator, found

    annotator, found = dense_diseases(lexical_types="Disease")
    assert annotator.settings.lexical_types == ("Disease",)
    assert set(annotator.linker.index.types) == {"Chemical"}
    assert found == []
    assert dense_diseases()[1]  # the same documents without the option
    run = _annotate(directory, tmp_path / "cache", "-", "-o", "-", "--lexical-types",
                    "Disease", input=TEXT)
    assert run.exit_code == 0 and run.stdout.strip(), run.output


def test_a_kb_of_the_users_own_names_the_cheaper_way_to_its_types(tmp_path):
    """What a long encode of a ``--kb`` names instead: the model's own KB with ``--types`` of
    the types the KB links, the concepts of the model's mined names apart (they join any KB);
    no ``--types`` when the KB links every type of the model."""
    from data_tools.kb import KB, Concept
    from e2e_linker.collective.loading import own_kb_alternative
    from e2e_linker.collective.model_dir import MANIFEST_FILE
    from e2e_linker.collective.model_kb import save_model_kb

    mined = KB([Concept("D1", "tamoxifen", [], "Chemical", "corpus"),
                Concept("G1", "BRCA1", [], "Gene", "corpus")])
    manifest = save_model_kb(tmp_path, "medic", mined, mined)
    (tmp_path / MANIFEST_FILE).write_text(json.dumps(manifest))
    diseases = KB([Concept("M1", "breast cancer", ["breast neoplasm"], "Disease", "medic"),
                   Concept("M2", "hepatitis", [], "Chemical|Disease", "medic")])
    types = ["Chemical", "Disease", "Gene", "Species"]
    line = own_kb_alternative(diseases.merge(mined), tmp_path, types)
    assert line.startswith("`--types Chemical,Disease` without `--kb` links these types")
    only = KB([Concept("M1", "breast cancer", [], "Disease", "medic")]).merge(mined)
    assert own_kb_alternative(only, tmp_path, types).startswith("`--types Disease` without")
    every = KB([Concept(f"X{i}", f"x {i}", [], t, "user") for i, t in enumerate(types)])
    assert own_kb_alternative(every, tmp_path, types) == \
        "without `--kb` the model's own KB starts at once from its packed index"
