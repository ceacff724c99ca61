"""eval.setting_rows: one detection pass scored low enough for every row."""

from __future__ import annotations

from types import SimpleNamespace

from data_tools.documents import Document, Passage
from e2e_linker.collective.settings import AnnotateSettings
from eval.setting_rows import setting_rows


class FakeAnnotator:
    """Records the threshold candidates were scored at; finds nothing."""

    def __init__(self, settings: AnnotateSettings):
        self.settings = settings
        self.linker = SimpleNamespace(sieves=None, text_linker=None, composites=True)
        self.detected_at: list[float] = []

    def detect(self, docs, threshold=None, resolve=True):
        self.detected_at.append(threshold)
        return [], []

    def select(self, candidates, docs):
        return []

    def link(self, spans, docs):
        return []


def rows_detected_at(settings: AnnotateSettings, grid: list[dict]) -> float:
    annotator = FakeAnnotator(settings)
    docs = [Document(id="d", passages=[Passage(offset=0, text="Aspirin.")])]
    rows = setting_rows(annotator, docs, grid)
    assert len(rows) == len(grid)
    return annotator.detected_at[0]


def test_the_annotators_own_propagation_threshold_lowers_the_detection_pass():
    """A grid that does not set the propagation threshold still selects at the model's 0.2:
    the one detection pass must score candidates down to it, not to γ alone."""
    settings = AnnotateSettings(threshold=0.3, propagation_threshold=0.2, name_extension=None)
    assert rows_detected_at(settings, [{"gene_products": "drop"}, {"gene_products": "keep"}]) \
        == 0.2
    assert rows_detected_at(settings, [{"dictionary_threshold": 0.1}]) == 0.1
    assert rows_detected_at(settings, [{"propagation_threshold": None}]) == 0.3
    # the name extension's floor (on by default) too
    assert rows_detected_at(AnnotateSettings(threshold=0.3, propagation_threshold=0.2),
                            [{"gene_products": "drop"}]) == 0.02
    assert rows_detected_at(settings, [{"name_extension": 0.05}]) == 0.05
