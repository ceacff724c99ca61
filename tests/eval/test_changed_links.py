"""eval.changed_links: the spans whose link two dev-table runs give differently, each gained,
lost or neither against gold; and the prediction files eval.ood_dev writes for it."""

from __future__ import annotations

import pytest

from data_tools.documents import Annotation, Document, Passage
from data_tools.formats import read_documents, write_documents
from eval import changed_links as cl
from eval import ood_dev

TEXT = "CCR9 and CCR10 bind HGF in asthma."


def _doc(spans: list[tuple[int, int, str, str]], doc_id: str = "1") -> Document:
    doc = Document(doc_id, [Passage(0, TEXT, {})])
    for n, (start, end, type_, cid) in enumerate(spans):
        doc.add_annotation(Annotation(start, end, TEXT[start:end], type_, [cid], id=str(n)))
    return doc


GOLD = [_doc([(0, 4, "Gene", "10803"), (9, 14, "Gene", "2826"), (20, 23, "Gene", "3082"),
              (27, 33, "Disease", "D001249")])]
BEFORE = [_doc([(0, 4, "Gene", "1238"), (9, 14, "Gene", "2826"), (20, 23, "Gene", "3569"),
                (27, 33, "Disease", "D001249")])]
AFTER = [_doc([(0, 4, "Gene", "10803"), (9, 14, "Gene", "1238"), (20, 23, "Gene", "7040"),
               (15, 19, "Gene", "1")])]


def test_each_changed_link_is_gained_lost_or_neither():
    changes = cl.link_changes(GOLD, BEFORE, AFTER, ("Gene",), None)
    by_text = {c["text"]: (c["before"], c["after"], c["gold"], c["class"]) for c in changes}
    assert by_text == {"CCR9": ("1238", "10803", "10803", "gained"),
                       "CCR10": ("2826", "1238", "2826", "lost"),
                       "bind": (None, "1", None, "neither"),  # no gold mention there
                       "HGF": ("3569", "7040", "3082", "neither")}
    assert [c["start"] for c in changes] == sorted(c["start"] for c in changes)
    # the disease the after run dropped is not of the types compared; unchanged links are
    # never listed
    assert cl.link_changes(GOLD, BEFORE, BEFORE, ("Gene", "Disease"), None) == []
    dropped = cl.link_changes(GOLD, BEFORE, AFTER, ("Disease",), None)
    assert [(c["text"], c["class"]) for c in dropped] == [("asthma", "lost")]


def test_a_predictions_file_names_its_corpus(tmp_path):
    path = ood_dev.predictions_file(tmp_path, "nlmgene:dev")
    assert path.name == "nlmgene_dev.pubtator"
    assert ood_dev.corpus_of_file(path) == "nlmgene:dev"
    assert ood_dev.corpus_of_file(tmp_path / "ncbi_disease_dev.pubtator") == "ncbi_disease:dev"
    with pytest.raises(ValueError, match="names no corpus"):
        ood_dev.corpus_of_file(tmp_path / "notes.pubtator")


def test_two_folders_are_compared_corpus_by_corpus(tmp_path, monkeypatch):
    """Predictions written as eval.ood_dev writes them (PubTator) read back with the same
    links; a corpus in one folder only is reported, not compared."""
    monkeypatch.setattr(cl, "gold_of", lambda spec: GOLD)
    monkeypatch.setattr(cl, "load_kb", lambda name: type("KB", (), {"resolve": None}))
    for name, docs in (("before", BEFORE), ("after", AFTER)):
        write_documents(docs, ood_dev.predictions_file(tmp_path / name, "nlmgene:dev"),
                        "pubtator")
    write_documents(BEFORE, ood_dev.predictions_file(tmp_path / "before", "gnormplus:dev"),
                    "pubtator")
    back = list(read_documents(ood_dev.predictions_file(tmp_path / "after", "nlmgene:dev")))
    assert cl.links(back, ("Gene",), None) == cl.links(AFTER, ("Gene",), None)
    result = cl.compare(tmp_path / "before", tmp_path / "after", examples=2)
    (row,) = result["rows"]
    assert (row["corpus"], row["changed"], row["gained"], row["lost"], row["neither"],
            row["net"], row["documents"]) == ("nlmgene:dev", 4, 1, 1, 2, 0, 1)
    assert len(row["examples"]) == 2
    assert result["in_one_folder_only"] == [
        f"gnormplus:dev: {ood_dev.predictions_file(tmp_path / 'before', 'gnormplus:dev')}"]


def test_a_folder_without_predictions_is_a_usage_error(tmp_path, capsys):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with pytest.raises(SystemExit) as stop:
        cl.main([str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "out")])
    assert stop.value.code == 2
    assert "eval.ood_dev --predictions" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
