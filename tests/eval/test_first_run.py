"""eval.first_run: the helpers of the first-run jobs."""

from __future__ import annotations

from eval import first_run


def test_first_pubtator_docs_keeps_the_first_n(tmp_path):
    source = tmp_path / "all.txt"
    source.write_text("1|t|A.\n1|a|B.\n\n2|t|C.\n2|a|D.\n\n3|t|E.\n3|a|F.\n")
    target = first_run.first_pubtator_docs(source, tmp_path / "two.txt", 2)
    assert target.read_text() == "1|t|A.\n1|a|B.\n\n2|t|C.\n2|a|D.\n\n"


def test_cache_mb_counts_files_under_the_cache(tmp_path):
    assert first_run.cache_mb(tmp_path) == 0
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "f").write_bytes(b"x" * 2**20)
    assert first_run.cache_mb(tmp_path) >= 1.0


def test_the_bound_and_the_example_are_the_readme_job():
    assert first_run.BOUND_S == 180.0
    assert first_run.EXAMPLE.is_file()
