"""eval.corpus_table: which cells are in-domain, and the table drawn from a result."""

from __future__ import annotations

from eval.corpus_table import in_domain, markdown


def test_a_cell_is_in_domain_only_when_the_row_trained_on_that_corpus():
    assert in_domain("ncbi_disease:dev", ["ncbi_disease:train"])
    assert not in_domain("bc5cdr:dev", ["ncbi_disease:train"])
    assert not in_domain("biored:dev", ["bc5cdr:train", "ncbi_disease:train"])


def _cell(strict: float, disease: float | None, types: list[str], inside: bool) -> dict:
    by_type = {"Disease": {"f1": disease}} if disease is not None else {}
    return {"scores": {"strict": {"f1": strict, "by_type": by_type}, "mentions": {"f1": 0.9}},
            "scored_types": types, "in_domain": inside}


def test_the_table_marks_out_of_domain_cells_and_the_shared_disease_score():
    result = {"machine": "test", "corpora": ["bc5cdr:dev", "ncbi_disease:dev"], "rows": [
        {"label": "ncbi", "trained_on": ["ncbi_disease:train"],
         "cells": [_cell(0.61, 0.61, ["Disease"], False), _cell(0.72, 0.72, ["Disease"], True)]},
        {"label": "chem", "trained_on": ["bc5cdr:train"],
         "cells": [_cell(0.9, None, ["Chemical"], True), _cell(0.0, None, [], False)]}]}
    table = markdown(result)
    ncbi = next(line for line in table.splitlines() if line.startswith("| ncbi"))
    assert "**out**: 0.6100 (Disease) / 0.6100 / 0.9000" in ncbi
    assert "in: 0.7200 (Disease)" in ncbi
    chem = next(line for line in table.splitlines() if line.startswith("| chem"))
    assert "in: 0.9000 (Chemical) / — / 0.9000" in chem
