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
