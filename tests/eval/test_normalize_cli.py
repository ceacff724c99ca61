"""eval.normalize_cli: the table of the default normalizer through ``linker normalize``."""

from __future__ import annotations

from eval import normalize_cli


def _case(acc, by_type):
    return {"score": {"accuracy": acc, "n": 10, "by_type": by_type},
            "score_as_written": {"accuracy": acc - 0.1, "n": 10, "by_type": by_type},
            "kb_ceiling": {"Chemical": 0.95, "Disease": 0.99}, "seconds": 1.5,
            "command": "linker normalize X", "score_command": "linker score Y"}


def test_acc_overall_and_by_type():
    report = {"accuracy": 0.9, "n": 5, "by_type": {"Chemical": {"accuracy": 0.8, "n": 3}}}
    assert normalize_cli._acc(report, None) == (0.9, 5)
    assert normalize_cli._acc(report, "Chemical") == (0.8, 3)
    assert normalize_cli._acc(report, "Gene") == (None, None)


def test_markdown_has_a_row_per_type_and_the_commands():
    by_type = {"Chemical": {"accuracy": 0.93, "n": 6}, "Disease": {"accuracy": 0.92, "n": 4}}
    results = {"model": "shipped", "search": "default", "kb": "bc5cdr", "machine": "cpu",
               "bc5cdr_test": _case(0.925, by_type), "ncbi_dev": _case(0.88, {})}
    table = normalize_cli.markdown(results)
    assert "| BC5CDR test | Chemical | 0.9300 |" in table
    assert "| BC5CDR test | Disease | 0.9200 |" in table
    assert "| NCBI dev (D = NCBI train) | all | 0.8800 | 0.7800 | 10 | 0.99 | 1.5 |" in table
    assert "- `linker normalize X`" in table
