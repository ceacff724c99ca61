"""Stand-ins for a loaded linker, for tests of the service's machinery without a model: an
annotator that records its calls, can be held at a gate, fails on a marked document, and can
be made slow: one forward pass of a (trivial) torch "encoder" per word, each ``delay``
seconds, so that the server's forward hooks see a long call as they see a real one."""

from __future__ import annotations

import copy
import threading
import time
from types import SimpleNamespace

import torch

from data_tools.documents import Annotation
from e2e_linker.api import Mention
from e2e_linker.collective.settings import AnnotateSettings

#: a text the fake annotator fails on
POISON = "POISON"


class FakeAnnotator:
    """Annotates each document with one mention over its first word; records the size of
    every call; waits at :attr:`gate` (when set) before each call."""

    def __init__(self) -> None:
        self.settings = AnnotateSettings()
        self.model = SimpleNamespace(config=SimpleNamespace(types=["Chemical", "Disease"]),
                                     encoder=SimpleNamespace(model=torch.nn.Identity()))
        self.calls: list[list[str]] = []
        self.gate: threading.Event | None = None
        self.entered = threading.Event()
        #: seconds each word's forward pass takes (0: no forward passes at all)
        self.delay = 0.0
        #: forward passes run, over all calls
        self.forwards = 0

    def annotate(self, docs, replace=False):
        self.entered.set()
        if self.gate is not None:
            assert self.gate.wait(30), "the test never opened the gate"
        self.calls.append([d.id for d in docs])
        if any(POISON in d.text for d in docs):
            raise RuntimeError("poisoned document")
        if self.delay:
            for doc in docs:
                for _ in doc.text.split():
                    time.sleep(self.delay)
                    self.model.encoder.model(torch.zeros(1))
                    self.forwards += 1
        out = []
        for doc in docs:
            doc = copy.deepcopy(doc)
            word = doc.text.split(" ")[0]
            if word:
                infons = {"annotator": "e2e_linker", "link_method": "dense"}
                if self.settings.explain:
                    infons["dense_candidates"] = "C1|2.0000;C2|1.5000"
                doc.add_annotation(Annotation(0, len(word), word, "Chemical", ["C1"],
                                              infons=infons, id="e2e0", mention_score=0.9,
                                              link_score=2.0))
            out.append(doc)
        return out


class FakeLinker:
    """What :class:`e2e_linker.serve.batching.Batcher` needs of a Linker."""

    def __init__(self) -> None:
        self.annotator = FakeAnnotator()
        self.kb = None
        self.normalizer = "loaded"

    def normalize(self, items):
        return [Mention(0, len(t), t, ty or "", "C1", None, None, 1.0) for t, ty in items]
