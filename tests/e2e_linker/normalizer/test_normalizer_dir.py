"""The normalizer's model directory: settings, save and load, the embedded default, and the
mention and synonym files."""

from __future__ import annotations

import json

import pytest

from data_tools.documents import FormatError
from e2e_linker.errors import UserError
from e2e_linker.normalizer import normalizer_dir as normalizer_module
from e2e_linker.normalizer.normalizer_dir import (
    ModelSettings,
    default_normalizer_dir,
    load_model,
    model_mentions_of,
    read_mentions,
    read_synonyms,
    save_model,
    write_mentions,
)


def test_model_dir_round_trip_and_default(tiny_encoder, tmp_path, monkeypatch):
    settings = ModelSettings(kb="medic", kb_hash="abc", lowercase=False, search="O-C",
                             extra={"steps": 3})
    directory = save_model(tiny_encoder, tmp_path / "model", settings)
    data = json.loads((directory / "normalizer.json").read_text())
    assert data["pooling"] == "mean" and data["kb"] == "medic" and data["steps"] == 3
    assert (directory / "encoder" / "model.safetensors").is_file()
    encoder, loaded = load_model(directory)
    assert loaded.kb == "medic" and loaded.lowercase is False and loaded.search == "O-C"
    assert encoder.pooling == "mean" and encoder.hidden_size == 32
    # a plain HF folder: mean pooling, default settings
    plain, plain_settings = load_model(directory / "encoder")
    assert plain.pooling == "mean" and plain_settings.kb is None
    monkeypatch.setattr(normalizer_module, "DEFAULT_NORMALIZER_DIR", tmp_path / "absent")
    with pytest.raises(UserError):
        default_normalizer_dir()
    monkeypatch.setattr(normalizer_module, "DEFAULT_NORMALIZER_DIR", directory)
    assert default_normalizer_dir() == directory


def test_the_embedded_default_normalizer_loads_and_separates_concepts():
    """The shipped adapter applies to the packaged base (hash-checked), records its KB, mode and
    D pool, and puts a synonym nearer than an unrelated name."""
    import torch

    encoder, settings = load_model(None)
    assert settings.kb == "bc5cdr" and settings.search == "OD-T"
    assert settings.lowercase and settings.punctuation
    mentions = model_mentions_of(None)
    assert mentions and len(mentions) > 4000  # BC5CDR train + dev: 4,588 distinct
    assert {t for _, _, t in mentions} >= {"Disease", "Chemical"}
    with torch.inference_mode():
        v = encoder.encode(["breast cancer", "breast neoplasms", "acetylsalicylic acid"])
    v = torch.nn.functional.normalize(torch.as_tensor(v, dtype=torch.float32), dim=-1)
    assert float(v[0] @ v[1]) > float(v[0] @ v[2]) + 0.2



def test_settings_keep_unknown_keys_verbatim():
    data = {"pooling": "cls", "max_length": 25, "kb": "medic", "steps": 7, "corpora": ["a"]}
    settings = ModelSettings.from_dict(data)
    assert settings.pooling == "cls" and settings.max_length == 25
    assert settings.extra == {"steps": 7, "corpora": ["a"]}
    assert settings.to_dict() == {**ModelSettings().to_dict(), **data}


def test_mentions_round_trip_sorted_distinct_and_single_spaced(tmp_path):
    path = tmp_path / "mentions.tsv"
    triples = [("renal  failure", "D1", "Disease"), ("aspirin", "C1", "Chemical"),
               ("renal failure", "D1", "Disease"), ("ASA", "C1", "Chemical")]
    assert write_mentions(path, triples) == 3
    assert path.read_text() == ("C1\tChemical\tASA\nC1\tChemical\taspirin\n"
                                "D1\tDisease\trenal failure\n")
    assert read_mentions(path) == [("ASA", "C1", "Chemical"), ("aspirin", "C1", "Chemical"),
                                   ("renal failure", "D1", "Disease")]
    assert model_mentions_of(tmp_path) == read_mentions(path)
    assert model_mentions_of(tmp_path / "elsewhere") is None


@pytest.mark.parametrize("content,line", [("C1\tChemical\n", 1),
                                          ("C1\tChemical\taspirin\n\tDisease\tfever\n", 2),
                                          ("C1\tChemical\t\n", 1)])
def test_malformed_mentions_name_the_line(tmp_path, content, line):
    path = tmp_path / "mentions.tsv"
    path.write_text(content)
    with pytest.raises(FormatError, match=f"line {line}: expected 'label<TAB>type<TAB>text'"):
        read_mentions(path)


def test_read_synonyms_skips_comments_and_blank_lines(tmp_path):
    path = tmp_path / "synonyms.tsv"
    path.write_text("# concept\tname\n\n D1 \t heart attack \r\nC1\tASA\textra column\n")
    assert read_synonyms(path) == [("D1", "heart attack"), ("C1", "ASA")]


@pytest.mark.parametrize("content,line", [("D1 heart attack\n", 1), ("D1\tMI\n\t fever\n", 2),
                                          ("D1\t  \n", 1)])
def test_read_synonyms_errors_name_file_and_line(tmp_path, content, line):
    path = tmp_path / "synonyms.tsv"
    path.write_text(content)
    with pytest.raises(FormatError, match=f"line {line}: expected 'concept_id<TAB>name'") as info:
        read_synonyms(path)
    assert info.value.path == str(path)


def test_load_model_errors_are_user_errors(tmp_path, tiny_encoder):
    with pytest.raises(UserError, match="no such model directory"):
        load_model(tmp_path / "absent")
    directory = save_model(tiny_encoder, tmp_path / "model", ModelSettings())
    (directory / "normalizer.json").write_text("{not json")
    with pytest.raises(UserError, match="not valid JSON"):
        load_model(directory)
