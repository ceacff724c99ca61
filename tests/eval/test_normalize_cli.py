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


def _doc():
    from data_tools.documents import Annotation, Document, Passage

    doc = Document("7", [Passage(0, "Aspirin caused renal failure in rats."),
                         Passage(38, "Headache followed; enzymes rose.")])
    doc.add_annotation(Annotation(0, 7, "Aspirin", "Chemical", ["D001241"]))
    doc.add_annotation(Annotation(15, 28, "renal failure", "Disease", ["D051437"]))
    doc.add_annotation(Annotation(38, 46, "Headache", "Disease", ["D006261"]))
    return doc


def test_made_up_mentions_touch_no_gold_mention_and_are_typed_like_gold():
    doc = _doc()
    made_up = normalize_cli.nil_mentions([doc], 6, seed=1)
    anns = [(d, a) for d in made_up for a in d.annotations]
    assert len(anns) == 6
    gold = [(a.start, a.end) for a in doc.annotations]
    in_context = [(d, a) for d, a in anns if d.id == "7-nil"]
    assert len(in_context) == 3  # half are n-grams of the document, at its offsets
    for d, a in in_context:
        assert d.text_at(a.start, a.end) == a.text == doc.text_at(a.start, a.end)
        assert not any(s < a.end and a.start < e for s, e in gold)
        assert a.text.split()[0].lower() not in normalize_cli.STOPWORDS
        assert not a.concept_ids and a.type in ("Chemical", "Disease")
    nonsense = [a.text for d, a in anns if d.id.startswith("nonsense-")]
    assert len(nonsense) == 3 and all(len(w) >= 6 and " " not in w for w in nonsense)
    assert normalize_cli.nil_mentions([doc], 6, seed=1)[0].annotations[0].text == \
        in_context[0][1].text  # a fixed sample


def test_nil_rows_count_nil_answers_at_each_threshold():
    gold = [(0.95, True), (0.75, True), (0.9, False), (None, False)]
    made_up = [0.7, 0.85, None]
    rows = normalize_cli.nil_rows(gold, made_up, (0.8,))
    assert rows[0] == {"threshold": 0.0, "acc1": 0.5, "nil_precision": 0.5,
                       "nil_recall": 0.3333}  # no score is NIL at every threshold
    # at 0.8: 0.75 is a right link lost; 0.7 and None made up, None gold: NIL answers
    assert rows[1] == {"threshold": 0.8, "acc1": 0.25, "nil_precision": 0.5,
                       "nil_recall": 0.6667}


def test_the_chosen_threshold_costs_every_dev_set_little_accuracy():
    def rows(*accs):
        return [{"threshold": t, "acc1": a} for t, a in zip((0.0, 0.7, 0.8, 0.9), accs,
                                                              strict=True)]

    cases = {"a": rows(0.9, 0.9, 0.899, 0.85), "b": rows(0.8, 0.8, 0.8, 0.8)}
    assert normalize_cli.chosen_threshold(cases) == 0.8
    cases["b"] = rows(0.8, 0.8, 0.79, 0.8)  # b loses 0.01 at 0.8, a loses 0.05 at 0.9
    assert normalize_cli.chosen_threshold(cases) == 0.7


def test_nil_markdown_marks_the_chosen_threshold():
    case = {"train_mentions": "x:train", "gold_mentions": 4, "made_up": 3, "search": "OD-T",
            "rows": [{"threshold": 0.0, "acc1": 0.5, "nil_precision": None,
                      "nil_recall": 0.0},
                     {"threshold": 0.8, "acc1": 0.25, "nil_precision": 0.5,
                      "nil_recall": 0.6667, "nil_recall_n_grams": 0.5,
                      "nil_recall_nonsense": 1.0}]}
    table = normalize_cli.nil_markdown({"threshold": 0.8, "model": "m", "made_up_per_set": 3,
                                        "seed": 0, "seconds": 1.0, "cases": {"x:dev": case},
                                        "command": "python -m eval.normalize_cli --nil"})
    assert "| 0.8 (chosen) | 0.2500 | 0.5000 | 0.6667 |" in table
    assert "| 0 | 0.5000 |  | 0.0000 |" in table
    assert "x:dev: 4 gold mentions (D pool x:train, search OD-T), 3 made up." in table
    assert "NIL recall at 0.8, word n-grams / nonsense words: x:dev 0.5000 / 1.0000." in table
