"""eval.reporting: what every evaluation leaves behind."""

from __future__ import annotations

import json

from data_tools.documents import Annotation, Document, Passage
from eval import reporting

TEXT = "Aspirin causes asthma."
ASPIRIN = Annotation(0, 7, "Aspirin", "Chemical", ["D001241"])
ASTHMA = Annotation(15, 21, "asthma", "Disease", ["D001249"])


def _doc(*anns):
    return Document("d", [Passage(0, TEXT, annotations=list(anns))])


def test_command_line_records_the_arguments():
    assert reporting.command_line("bench", ["--max-docs", "5"]) == "python -m eval.bench --max-docs 5"


def test_lists_of_numbers_stay_on_one_line_and_the_json_reads_back():
    result = {"counts": {"d1": [3, 0, 1], "d2": [0, 2, 0]}, "scores": [0.5, -1e-05],
              "names": ["a", "b"], "nested": [[1, 2], {"x": [4]}], "empty": []}
    text = reporting.results_json(result)
    assert json.loads(text) == result
    assert '"d1": [3, 0, 1]' in text and '"scores": [0.5, -1e-05]' in text
    assert '"names": [\n' in text  # strings keep json's layout


def test_write_results_writes_json_and_markdown(tmp_path, capsys):
    reporting.write_results(tmp_path / "out", {"f1": 0.5}, "| a |\n")
    assert json.loads((tmp_path / "out" / "results.json").read_text()) == {"f1": 0.5}
    assert (tmp_path / "out" / "results.md").read_text() == "| a |\n"
    assert "| a |" in capsys.readouterr().out


def test_f1_fields_overall_and_by_type():
    fields = reporting.f1_fields([_doc(ASPIRIN, ASTHMA)], [_doc(ASPIRIN)])
    assert fields["strict"] == round(2 / 3, 4)
    assert fields["strict_by_type"]["Chemical"] == 1.0
    assert set(fields) == {"strict", "strict_by_type", "partial", "partial_by_type"}
