"""eval.cross_corpus scores only the model's Disease mentions against NCBI disease."""

from __future__ import annotations

from data_tools.formats import read_documents
from eval.cross_corpus import diseases_only

PUBTATOR = """\
1|t|Aspirin and asthma.
1|a|Asthma again.
1\t0\t7\tAspirin\tChemical\tD001241
1\t12\t18\tasthma\tDisease\tD001249
1\t20\t26\tAsthma\tDisease\tD001249

"""


def test_diseases_only_keeps_the_disease_annotations_and_the_text(tmp_path):
    source, target = tmp_path / "in.pubtator", tmp_path / "out.pubtator"
    source.write_text(PUBTATOR)
    assert diseases_only(source, target) == 2
    (doc,) = read_documents(target)
    assert [(a.text, a.type) for a in doc.annotations] == [("asthma", "Disease"),
                                                            ("Asthma", "Disease")]
    assert doc.text == next(iter(read_documents(source))).text


def test_the_annotate_run_takes_the_pipeline_options_as_annotate_parses_them(tmp_path):
    """The command built is one ``linker annotate`` accepts, with the pipeline changes given."""
    import argparse

    from e2e_linker.commands.annotate import command
    from eval.cross_corpus import annotate_command
    from eval.ood_dev import add_pipeline_options

    parser = argparse.ArgumentParser()
    add_pipeline_options(parser)
    parser.add_argument("--annotate-options", default="")
    args = parser.parse_args(["--disable", "short_forms,lexical_gate", "--set",
                              "propagation.threshold=0.2", "--threshold", "0.4",
                              "--annotate-options", "--types Disease"])
    gold = tmp_path / "gold.pubtator"
    gold.write_text(PUBTATOR)
    (tmp_path / "model").mkdir()
    argv = annotate_command(gold, tmp_path / "out.pubtator", str(tmp_path / "model"), args)
    assert argv[0] == "annotate"
    params = command.make_context("annotate", argv[1:]).params
    assert params["disable"] == "short_forms,lexical_gate"
    assert params["overrides"] == ("propagation.threshold=0.2",)
    assert params["threshold"] == 0.4 and params["types"] == "Disease"
    assert params["model_dir"] == str(tmp_path / "model") and params["replace"]
