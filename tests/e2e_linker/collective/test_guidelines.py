"""Guideline tags: which token a guideline is read with, the errors a caller can meet, and an
annotator that reads its text under the chosen tag."""

from __future__ import annotations

import dataclasses

import pytest

from e2e_linker.collective.guidelines import guideline_prefix, tag_token
from e2e_linker.collective.model import LinkerConfig
from e2e_linker.encoder.text_encoder import load_tokenizer
from e2e_linker.errors import UserError

GUIDELINES = ["biored", "ncbi_disease"]


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer(None)


def test_a_guideline_is_read_as_its_unused_vocabulary_entry(tokenizer):
    ids = {name: guideline_prefix(tokenizer, GUIDELINES, "biored", name) for name in GUIDELINES}
    assert ids["biored"] == [tokenizer.convert_tokens_to_ids(tag_token(0))]
    assert ids["ncbi_disease"] == [tokenizer.convert_tokens_to_ids("[unused2]")]
    assert ids["biored"] != ids["ncbi_disease"]
    assert guideline_prefix(tokenizer, GUIDELINES, "biored", None) == ids["biored"]


def test_a_model_without_guidelines_reads_no_tag(tokenizer):
    assert guideline_prefix(tokenizer, [], None, None) == []
    with pytest.raises(UserError, match="names the guideline 'biored', but this model was "
                                        "trained without guideline tags"):
        guideline_prefix(tokenizer, [], None, "biored")


@pytest.mark.parametrize("default,chosen,message", [
    ("biored", "ncbi", "unknown guideline 'ncbi'; this model knows biored, ncbi_disease"),
    (None, None, "names no default guideline: the pipeline must name one"),
])
def test_a_guideline_the_model_cannot_read_is_a_user_error(tokenizer, default, chosen,
                                                           message):
    with pytest.raises(UserError, match=message):
        guideline_prefix(tokenizer, GUIDELINES, default, chosen)


def test_a_vocabulary_without_the_tag_entry_is_a_user_error(tokenizer):
    with pytest.raises(UserError, match=r"no \[unused1000\] entry"):
        guideline_prefix(tokenizer, [f"g{k}" for k in range(1000)], "g999", None)


@pytest.mark.parametrize("data,message", [
    ({"guidelines": ["a", "a"]}, "guidelines lists a name twice"),
    ({"guidelines": ["a"], "default_guideline": "b"}, "default_guideline 'b' is not one of"),
    ({"default_guideline": "b"}, r"not one of guidelines \(none\)"),
])
def test_a_config_with_inconsistent_guidelines_is_refused(data, message):
    with pytest.raises(UserError, match=message):
        LinkerConfig.from_dict(data)
    # read from a model directory's file: the error names it
    with pytest.raises(UserError, match=r"^model/linker_config\.json: .*" + message):
        LinkerConfig.from_dict(data, "model/linker_config.json")


def test_the_annotator_reads_its_text_under_its_pipelines_guideline(tmp_path):
    from e2e_linker.collective.annotator import Annotator
    from tests.helpers.synthetic import synthetic_docs
    from tests.helpers.tiny_linker import tiny_annotator

    annotator = tiny_annotator(tmp_path)
    docs = synthetic_docs(2)
    plain = annotator.chunk(docs)
    annotator.model.config = dataclasses.replace(annotator.model.config,
                                                 guidelines=GUIDELINES,
                                                 default_guideline="biored")
    for chosen, token in ((None, "[unused1]"), ("ncbi_disease", "[unused2]")):
        other = Annotator(annotator.model, annotator.linker, annotator.settings,
                          pipeline=dataclasses.replace(annotator.pipeline, guideline=chosen))
        chunks = other.chunk(docs)
        tag = annotator.model.tokenizer.convert_tokens_to_ids(token)
        assert [c.input_ids[1] for c in chunks] == [tag] * len(chunks)
        assert [c.input_ids[2:] for c in chunks] == [c.input_ids[1:] for c in plain]
        assert len(other.annotate(docs)) == len(docs)  # the tagged text runs through
    with pytest.raises(UserError, match="unknown guideline 'bc5cdr'"):
        Annotator(annotator.model, annotator.linker, annotator.settings,
                  pipeline=dataclasses.replace(annotator.pipeline, guideline="bc5cdr"))


def test_a_declaration_names_its_guideline_and_writes_it_back():
    import tomllib

    from e2e_linker.pipeline.declaration import Pipeline

    steps = [s.name for s in Pipeline.every_step().steps if s.required]
    declared = Pipeline.from_mapping({"guideline": "ncbi_disease", "steps": steps}, "t.toml")
    assert declared.guideline == "ncbi_disease"
    assert declared.changed(overrides=("score_floor",)).guideline == "ncbi_disease"
    assert "annotation guideline ncbi_disease" in declared.describe()
    assert tomllib.loads(declared.to_toml()) == {"guideline": "ncbi_disease", "steps": steps}
    assert "guideline" not in Pipeline.from_mapping({"steps": steps}, "t").to_toml()
    with pytest.raises(UserError, match="'guideline' must be the name"):
        Pipeline.from_mapping({"guideline": 3, "steps": steps}, "t.toml")
