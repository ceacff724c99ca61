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
