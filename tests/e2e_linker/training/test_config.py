"""``linker train`` configuration: YAML in, typos and malformed files refused in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from e2e_linker.collective.model import LinkerConfig
from e2e_linker.errors import UserError
from e2e_linker.training.config import TrainConfig, read_yaml_mapping, reject_unknown_keys

CONFIGS = Path(__file__).resolve().parents[3] / "configs"


def test_yaml_with_a_model_section(tmp_path):
    path = tmp_path / "train.yaml"
    path.write_text("epochs: 2\ntrain: [bc5cdr:train, bc5cdr:dev]\nmodel:\n  threshold: 0.4\n")
    config = TrainConfig.from_yaml(path)
    assert config.epochs == 2 and config.train == ["bc5cdr:train", "bc5cdr:dev"]
    assert isinstance(config.model, LinkerConfig) and config.model.threshold == 0.4
    assert config.lr == TrainConfig().lr  # unset keys keep their defaults
    again = TrainConfig.from_dict(config.to_dict())
    assert again == config


def test_the_shipped_config_parses():
    config = TrainConfig.from_yaml(CONFIGS / "bc5cdr.yaml")
    assert config.kb and config.train


@pytest.mark.parametrize("content,message", [
    ("epochs: 2\nepoch: 3\nlearning_rate: 1\n", "unknown keys epoch, learning_rate"),
    ("model:\n  treshold: 0.4\n", "unknown model config keys: treshold"),
    ("- a\n- b\n", "expected a mapping of options"),
    ("epochs: [1\n", "not valid YAML"),
    ("missed_positive_weight: 0\n", "missed_positive_weight must be a positive number"),
    ("missed_positive_below: 1.5\n", "missed_positive_below a probability"),
])
def test_bad_configs_are_user_errors(tmp_path, content, message):
    path = tmp_path / "train.yaml"
    path.write_text(content)
    with pytest.raises(UserError, match=message):
        TrainConfig.from_yaml(path)


def test_an_empty_file_is_an_empty_mapping_and_unknown_keys_name_the_source(tmp_path):
    path = tmp_path / "empty.yaml"
    path.write_text("")
    assert read_yaml_mapping(path) == {}
    assert TrainConfig.from_yaml(path) == TrainConfig()
    with pytest.raises(UserError, match="^cli: unknown keys zz$"):
        reject_unknown_keys(TrainConfig, {"zz": 1, "epochs": 1}, "cli")


# ---- several corpora ------------------------------------------------------------------------

THREE = {"types": ["Chemical", "Disease", "Gene"]}


def _config(**data) -> TrainConfig:
    return TrainConfig.from_dict({"model": THREE, **data}, "test.yaml")


def test_old_string_lists_resolve_to_corpora_annotating_every_type():
    config = TrainConfig.from_yaml(CONFIGS / "bc5cdr.yaml")
    assert config.train == ["bc5cdr:train"] and config.dev == "bc5cdr:dev"  # kept as written
    (entry,) = config.train_corpora()
    assert (entry.corpus, entry.types, entry.weight, entry.partial) == \
        ("bc5cdr:train", ("Chemical", "Disease"), 1.0, False)
    assert [e.corpus for e in config.dev_corpora()] == ["bc5cdr:dev"]
    assert config.init_from is None
    ncbi = TrainConfig.from_yaml(CONFIGS / "ncbi_disease.yaml")
    assert ncbi.train_corpora()[0].renames == ncbi.type_map  # the global map, on every corpus
    assert TrainConfig(dev=None).dev_corpora() == []


def test_mapping_entries_with_types_type_map_and_weight():
    config = _config(
        type_map={"Drug": "Chemical", "FamilyName": "Gene"},
        train=["bc5cdr:train",
               {"corpus": "gnormplus:train", "types": ["Gene"], "weight": 0.5,
                "type_map": {"Gene": "Gene", "FamilyName": None, "DomainMotif": None}}],
        dev=[{"corpus": "bc5cdr:dev", "types": ["Chemical", "Disease"]}, "ncbi_disease:dev"])
    full, genes = config.train_corpora()
    assert not full.partial and full.types == ("Chemical", "Disease", "Gene")
    assert genes.partial and genes.types == ("Gene",) and genes.weight == 0.5
    # the entry's own map overrides the global one, which still applies to its other keys
    assert genes.renames == {"Drug": "Chemical", "Gene": "Gene"}
    assert genes.ignored_types == {"FamilyName", "DomainMotif"}
    dev = config.dev_corpora()
    assert [(e.corpus, e.partial) for e in dev] == [("bc5cdr:dev", True),
                                                    ("ncbi_disease:dev", False)]
    assert TrainConfig.from_dict(config.to_dict()) == config


@pytest.mark.parametrize("data,message", [
    ({"train": [{"corpus": "a:train", "typse": ["Gene"]}]},
     r"train\[0\]: unknown keys typse; a corpus entry takes corpus, types, type_map, weight"),
    ({"train": [{"types": ["Gene"]}]}, r"train\[0\]: a corpus entry needs 'corpus"),
    ({"train": [{"corpus": "a:train", "types": ["Protein"]}]},
     r"train\[0\] \(a:train\): types Protein not in model.types"),
    ({"train": [{"corpus": "a:train", "types": []}]}, "types must be a non-empty list"),
    ({"train": [{"corpus": "a:train", "type_map": {"Gene": "Protein"}}]},
     "type_map sends Gene to 'Protein', which is not one of model.types"),
    ({"train": [{"corpus": "a:train", "weight": 0}]}, "weight must be a positive number"),
    ({"train": [{"corpus": "a:train", "weight": -1}]}, "weight must be a positive number"),
    ({"train": [{"corpus": "a:train", "weight": "half"}]}, "weight must be a positive number"),
    ({"train": [{"corpus": "a:train", "weight": True}]}, "weight must be a positive number"),
    ({"train": [{"corpus": "a:train", "weight": float("inf")}]}, "weight must be a positive"),
    ({"train": [3]}, r"train\[0\]: expected a corpus spec"),
    ({"dev": [{"corpus": "a:dev", "weight": 2}]}, "dev corpora are not sampled"),
    ({"train": ["gnormplus:test"]}, "train: gnormplus:test is not allowed here: a test split"),
    ({"dev": "biored:dev"}, "dev: biored:dev is not allowed here: BioRED dev is the out-of-"),
    ({"kb_corpus_names": ["biored:dev"]}, "kb_corpus_names: biored:dev is not allowed"),
    ({"train": [{"corpus": "a:train", "types": ["Gene"]}],
      "model": {**THREE, "mention_head": "bio"}}, "the BIO head cannot train on"),
])
def test_bad_corpus_entries_are_user_errors(data, message):
    with pytest.raises(UserError, match=message):
        _config(**data)


def test_the_bio_head_takes_corpora_that_annotate_every_type_and_ignore_maps():
    config = _config(model={**THREE, "mention_head": "bio"},
                     train=[{"corpus": "a:train", "type_map": {"FamilyName": None}}])
    assert config.train_corpora()[0].ignored_types == {"FamilyName"}


def test_the_shipped_multi_corpus_config_parses():
    config = TrainConfig.from_yaml(CONFIGS / "multi_corpus.yaml")
    assert config.model.types == ["Chemical", "Disease", "Gene"]
    assert config.init_from == "runs/bc5cdr_ncbi"
    train = {e.corpus: e for e in config.train_corpora()}
    assert set(train) == {"bc5cdr:train", "ncbi_disease:train", "gnormplus:train",
                          "nlmgene:train"}
    assert all(e.partial for e in train.values())  # none of them annotates all three types
    assert train["gnormplus:train"].types == ("Gene",)
    assert train["nlmgene:train"].ignored_types >= {"FamilyName", "DomainMotif", "Cell"}
    assert train["ncbi_disease:train"].renames["SpecificDisease"] == "Disease"
    dev = [e.corpus for e in config.dev_corpora()]
    assert dev == ["bc5cdr:dev", "ncbi_disease:dev"]
    assert {"gnormplus:train", "nlmgene:train"} <= set(config.kb_corpus_names) \
        & set(config.train_kb_corpus_names)
    assert "ncbi_disease:dev" not in config.kb_corpus_names  # NCBI dev is scored


def test_the_biored_and_species_config_keeps_every_dev_and_test_document_out():
    """One run for the learning and species issues: BioRED train in full (four types), the
    species corpora's fit folds, and every dev or test set excluded from the corpora that
    share documents with it."""
    config = TrainConfig.from_yaml(CONFIGS / "multi_corpus_biored_species.yaml")
    assert config.model.types == ["Chemical", "Disease", "Gene", "Species"]
    assert config.model.lexical_types == ["Gene", "Species"] and config.keep_epochs
    train = {e.corpus: e for e in config.train_corpora()}
    biored = train["biored:train"]
    assert not biored.partial and biored.renames["OrganismTaxon"] == "Species"
    assert {"SequenceVariant", "CellLine"} <= biored.ignored_types
    assert {"bc5cdr:dev", "ncbi_disease:dev", "gnormplus:dev", "nlmgene:dev"} <= \
        set(biored.exclude)
    for name in ("bc5cdr:train", "ncbi_disease:train", "gnormplus:fit", "nlmgene:fit"):
        assert train[name].exclude == ("biored:train",)  # BioRED's copy is the one taught
    assert train["s800:fit"].types == train["linnaeus:fit"].types == ("Species",)
    everything = set(config.kb_corpus_names) | set(config.train_kb_corpus_names) | set(train)
    assert not any(spec.endswith((":dev", ":test")) for spec in everything - {"bc5cdr:dev"})
    assert "bc5cdr:dev" not in config.train_kb_corpus_names


def test_exclude_takes_a_list_of_corpus_specs():
    from e2e_linker.training.config import parse_corpus_entry

    entry = parse_corpus_entry({"corpus": "x", "exclude": "bc5cdr:dev"}, ["Chemical"], {}, "t")
    assert entry.exclude == ("bc5cdr:dev",)
    with pytest.raises(UserError, match="exclude must be a list of corpus specs"):
        parse_corpus_entry({"corpus": "x", "exclude": [3]}, ["Chemical"], {}, "t")


def test_excluded_documents_are_left_out_by_id(monkeypatch):
    from data_tools.documents import Document, Passage
    from e2e_linker.training import collective
    from e2e_linker.training.config import CorpusEntry

    def doc(pmid):
        return Document(id=pmid, passages=[Passage(offset=0, text="x")])

    monkeypatch.setattr(collective, "load_corpus", lambda spec: [doc("2"), doc("9")])
    entry = CorpusEntry("biored:train", ("Chemical",), exclude=("bc5cdr:dev",))
    kept = collective.leave_out_excluded(entry, [doc("1"), doc("2"), doc("3")])
    assert [d.id for d in kept] == ["1", "3"]
    plain = CorpusEntry("biored:train", ("Chemical",))
    assert len(collective.leave_out_excluded(plain, [doc("1"), doc("2")])) == 2


TAGGED = {**THREE, "guidelines": ["biored", "ncbi_disease"], "default_guideline": "biored"}


@pytest.mark.parametrize("data,message", [
    ({"train": [{"corpus": "a:train", "guideline": "bc5cdr"}], "model": TAGGED},
     r"a:train: guideline 'bc5cdr' is not one of model.guidelines \(biored, ncbi_disease\)"),
    ({"train": [{"corpus": "a:train", "guideline": "biored"}]},
     r"guideline 'biored' is not one of model.guidelines \(none\)"),
    ({"train": [{"corpus": "a:train", "guideline": ""}], "model": TAGGED},
     "guideline must be the name of one of model.guidelines"),
    ({"train": [{"corpus": "a:train"}], "dev": None,
      "model": {**TAGGED, "default_guideline": None}},
     "give every corpus entry a guideline, or set model.default_guideline"),
])
def test_a_corpus_guideline_the_model_does_not_declare_is_refused(data, message):
    with pytest.raises(UserError, match=message):
        _config(**data)


def test_the_guidelines_config_tags_every_corpus_with_its_own_guideline():
    """One tag a corpus: no two corpora share a guideline, every corpus names one the model
    declares, and the default is BioRED's (the guideline PubTator3 follows)."""
    config = TrainConfig.from_yaml(CONFIGS / "multi_corpus_guidelines.yaml")
    train = config.train_corpora()
    assert config.model.default_guideline == "biored" and config.init_from
    assert sorted(e.guideline for e in train) == sorted(config.model.guidelines)
    assert {e.corpus: e.guideline for e in config.dev_corpora()} == {
        "bc5cdr:dev": "bc5cdr", "ncbi_disease:dev": "ncbi_disease"}
    assert {e.corpus: e.guideline for e in train}["biored:train"] == "biored"


def test_the_guidelines_run_from_the_base_encoder_tags_from_the_first_step():
    """Decision 0041's test left: the tagged run without a warm start, the same corpora and
    tags as the continuation, every dev and test document kept out as there."""
    config = TrainConfig.from_yaml(CONFIGS / "multi_corpus_guidelines_scratch.yaml")
    tagged = TrainConfig.from_yaml(CONFIGS / "multi_corpus_guidelines.yaml")
    assert not config.init_from and config.keep_epochs and config.checkpoint_minutes
    assert config.model.guidelines == tagged.model.guidelines
    train = {e.corpus: e for e in config.train_corpora()}
    assert {c: e.guideline for c, e in train.items()} == \
        {e.corpus: e.guideline for e in tagged.train_corpora()}
    assert {c: e.exclude for c, e in train.items()} == \
        {e.corpus: e.exclude for e in tagged.train_corpora()}
