"""The `linker` CLI: score and convert on real files; bad input gives one line and exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from e2e_linker.cli import main


@pytest.fixture()
def runner():
    return CliRunner()


def test_score_json_on_real_baseline(runner, shared_data):
    gold = shared_data / "bc5cdr" / "CDR_TestSet.PubTator.txt"
    base = shared_data / "bc5cdr" / "baselines"
    result = runner.invoke(main, ["score", str(gold), str(base / "TestSet.DNorm.PubTator.txt"),
                                  str(base / "TestSet.tmChem.PubTator.txt"), "--partial", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert {"precision", "recall", "f1", "tp", "fp", "fn"} <= set(data)
    assert 0 < data["f1"] < 1


def test_score_table_by_type(runner, shared_data):
    gold = shared_data / "bc5cdr" / "CDR_TestSet.BioC.xml"
    pred = shared_data / "bc5cdr" / "baselines" / "TestSet.DNorm.PubTator.txt"
    result = runner.invoke(main, ["score", str(gold), str(pred), "--by-type"])
    assert result.exit_code == 0, result.output
    assert "Disease" in result.output and "Chemical" in result.output


def test_score_kb_maps_alternative_ids(runner, tmp_path):
    """Gold citing an OMIM alternative ID and a prediction with the MeSH primary ID: wrong
    when compared as written (neleval's default), right with --kb resolving both sides."""
    kb = tmp_path / "kb.tsv"
    kb.write_text("MESH:D003922|OMIM:222100||Diabetes Mellitus, Type 1|IDDM\n"
                  "MESH:D006973||Hypertension\n", encoding="utf-8")
    text = "IDDM and hypertension."
    gold = tmp_path / "gold.txt"
    pred = tmp_path / "pred.txt"
    gold.write_text(f"1|t|{text}\n1\t0\t4\tIDDM\tDisease\tOMIM:222100\n"
                    "1\t9\t21\thypertension\tDisease\tD006973\n\n", encoding="utf-8")
    pred.write_text(f"1|t|{text}\n1\t0\t4\tIDDM\tDisease\tD003922\n"
                    "1\t9\t21\thypertension\tDisease\tD006973\n\n", encoding="utf-8")
    plain = runner.invoke(main, ["score", str(gold), str(pred), "--accuracy", "--json"])
    mapped = runner.invoke(main, ["score", str(gold), str(pred), "--accuracy", "--json",
                                  "--kb", f"medic:{kb}"])
    assert plain.exit_code == 0 and mapped.exit_code == 0, plain.output + mapped.output
    assert json.loads(plain.output)["accuracy"] == 0.5
    assert json.loads(mapped.output)["accuracy"] == 1.0
    bad = runner.invoke(main, ["score", str(gold), str(pred), "--kb", "nosuchkb"])
    assert bad.exit_code == 2 and "nosuchkb" in bad.output


def test_convert_round_trip(runner, shared_data, tmp_path):
    src = shared_data / "bc5cdr" / "CDR_DevelopmentSet.PubTator.txt"
    assert runner.invoke(main, ["convert", str(src), str(tmp_path / "d.xml")]).exit_code == 0
    assert runner.invoke(main, ["convert", str(tmp_path / "d.xml"), str(tmp_path / "d.json")]).exit_code == 0
    assert runner.invoke(main, ["convert", str(tmp_path / "d.json"), str(tmp_path / "d.txt")]).exit_code == 0
    assert (tmp_path / "d.txt").read_bytes() == src.read_bytes()


@pytest.mark.parametrize("content,suffix", [
    ("<collection><document><id>1</id>", ".xml"),
    ('{"documents": [{"id": 3}]}', ".json"),
    ("1|t|T\n1\t0\tx\tT\tDisease\tD1\n", ".txt"),
    ("", ".txt"),
])
def test_bad_input_is_one_line_exit_2_no_output(tmp_path, content, suffix):
    bad = tmp_path / f"bad{suffix}"
    bad.write_text(content)
    out = tmp_path / "out.xml"
    proc = subprocess.run([sys.executable, "-m", "e2e_linker", "convert", str(bad), str(out)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and "bad" in lines[0]
    assert "Traceback" not in proc.stderr
    assert not out.exists() and not any(p.name.startswith(".out") for p in tmp_path.iterdir())


def test_score_bad_gold_exit_2(runner, tmp_path, shared_data):
    bad = tmp_path / "g.txt"
    bad.write_text("1|t|T\n1\t5\t2\tT\tDisease\tD1\n")
    pred = shared_data / "bc5cdr" / "baselines" / "TestSet.DNorm.PubTator.txt"
    result = runner.invoke(main, ["score", str(bad), str(pred)])
    assert result.exit_code == 2 and "line 2" in result.output


@pytest.mark.parametrize("name", ["score", "convert", "train", "annotate", "export",
                                  "normalize", "train-triplet", "export-normalizer"])
def test_every_command_is_registered_and_has_help(runner, name):
    result = runner.invoke(main, [name, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output and name in result.output


@pytest.mark.parametrize("args, words", [
    (["annotate", "x.txt", "-o", "-", "--thresold", "0.5"], ["no such option", "--threshold"]),
    (["annotat"], ["no such command 'annotat'"]),
    (["--quiet"], ["no such option '--quiet'"]),
    (["annotate", "-o", "-"], ["missing argument"]),
    (["annotate", "x.txt", "-o", "-", "--format", "xml"], ["'xml' is not one of", "jsonl"]),
    (["annotate", "x.txt", "-o", "-", "--threshold", "2"], ["--threshold", "0<=x<=1"]),
    (["annotate", "x.txt", "-o", "-", "--batch-size", "0"], ["--batch-size", "x>=1"]),
])
def test_a_usage_error_is_one_line_exit_2(runner, tmp_path, monkeypatch, args, words):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.txt").write_text("Aspirin.\n")
    result = runner.invoke(main, args, prog_name="linker")
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "-h`" in lines[0] and "Usage:" not in result.output
    for word in words:
        assert word in lines[0], (word, lines[0])


def test_help_is_unchanged_by_the_one_line_errors(runner):
    for args in (["-h"], ["--help"], ["annotate", "-h"], ["kb", "--help"]):
        result = runner.invoke(main, args, prog_name="linker")
        assert result.exit_code == 0 and result.output.startswith("Usage: linker"), args
    assert "-v, --verbose" in runner.invoke(main, ["-h"]).output
    bare = runner.invoke(main, [], prog_name="linker")  # plain `linker`: the help, as before
    assert "Usage: linker" in bare.output and "Commands:" in bare.output


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    from tests.helpers.tiny_linker import tiny_linker_dir

    root = tmp_path_factory.mktemp("quiet")
    model, _ = tiny_linker_dir(root / "tiny")
    return model, root / "cache"


def _one_sentence(tiny_model, *first: str) -> subprocess.CompletedProcess:
    """`linker [first] annotate - -o -` on one sentence, stderr a pipe (no terminal)."""
    from e2e_linker.console import VERBOSE_ENV

    model, cache = tiny_model
    env = {k: v for k, v in os.environ.items() if k != VERBOSE_ENV}
    env["E2E_LINKER_CACHE"] = str(cache)
    return subprocess.run([sys.executable, "-m", "e2e_linker", *first, "annotate", "-", "-o",
                           "-", "--model", str(model), "--index", "exact"],
                          input="Aspirin caused a headache.\n", env=env, capture_output=True,
                          text=True, timeout=300)


def test_no_line_on_stderr_for_a_successful_run_without_a_terminal(tiny_model):
    first = _one_sentence(tiny_model)  # a cold cache: the KB is encoded in this run
    assert first.returncode == 0, first.stderr
    assert first.stderr == ""
    assert first.stdout and all(json.loads(line) for line in first.stdout.splitlines())
    # -v: the progress, the summary and the KB index lines come back
    loud = _one_sentence(tiny_model, "-v")
    assert loud.returncode == 0, loud.stderr
    assert loud.stdout == first.stdout
    assert "wrote 1 documents" in loud.stderr and "mentions found" in loud.stderr
    assert "documents:" in loud.stderr  # the progress bar


def test_verbose_lasts_for_its_run_only(runner, tmp_path, monkeypatch):
    from e2e_linker.console import VERBOSE_ENV

    monkeypatch.delenv(VERBOSE_ENV, raising=False)
    seen = []
    monkeypatch.setattr("e2e_linker.commands.convert.command.callback",
                        lambda **kwargs: seen.append(os.environ.get(VERBOSE_ENV)))
    (tmp_path / "a.txt").write_text("1|t|T\n\n")
    source, target = str(tmp_path / "a.txt"), str(tmp_path / "b.xml")
    assert runner.invoke(main, ["-v", "convert", source, target]).exit_code == 0
    assert runner.invoke(main, ["convert", source, target]).exit_code == 0
    assert seen == ["1", None] and VERBOSE_ENV not in os.environ
