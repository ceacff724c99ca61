"""eval.scaling: 1 vs N processes, the table and the corpus it runs on."""

from __future__ import annotations

import data_tools.registry as registry
from eval import scaling


def test_markdown_has_a_row_per_run():
    run = {"processes": 2, "torch_threads_per_process": 1, "wall_s": 10.0, "docs_per_s": 10.0,
           "annotate_s": 8.0, "annotate_docs_per_s": 12.5, "speedup_annotating": 1.8,
           "cpu_s_all_processes": 16.0, "identical_to_first": True,
           "peak_anon_mib_all_processes": 900, "loadavg_before": "1.0", "loadavg_after": "2.0"}
    record = {"docs": 100, "machine": "cpu", "cores": 2, "torch": "2", "model": "shipped",
              "shard_size": 10, "runs": [run], "args": "--processes 1 2"}
    table = scaling.markdown(record)
    assert "| 2 | 1 | 10.0 | 10.0 | 8.0 | 12.5 | 1.8 | 16.0 | True | 900 | 1.0 | 2.0 |" in table
    assert "Command: `python -m eval.scaling --processes 1 2`" in table


def test_bc5cdr_subset_takes_the_first_documents(tmp_path, monkeypatch):
    root = tmp_path / "bc5cdr"
    root.mkdir()
    (root / "CDR_TestSet.PubTator.txt").write_text(
        "".join(f"{i}|t|Title {i}.\n{i}|a|Text.\n\n" for i in (1, 2, 3)))
    monkeypatch.setattr(registry, "data_dir", lambda: tmp_path)
    path = scaling.bc5cdr_subset(2, tmp_path / "two.txt")
    text = path.read_text()
    assert "Title 1." in text and "Title 2." in text and "Title 3." not in text
