"""The shipped model's declared pipeline gives the output the tree gave before the
declaration, to the byte, on the first 100 abstracts of BC5CDR dev.

Why: the pipeline declaration (e2e_linker/default_model/pipeline.toml) replaced rules wired
through five methods; a step that runs in another order, reads another floor or is missing
changes some annotation. The digest below is of ``linker annotate`` (PubTator in, BioC XML
out, ``--replace``, the packed index, one thread, an empty cache) as commit 43b11c1 wrote it,
before the declaration. The cache must start empty: a link score's fourth decimal depends on
which names the cache encoded together (a batch's padding changes the float sums), so a
cache that earlier runs filled can move it. Change the digest only with a change meant to
move the output, and say why in that commit.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from data_tools.registry import data_dir

#: sha256 of the BioC XML for the first 100 BC5CDR dev abstracts (see the module docstring)
DEV_100_SHA256 = "9570c8963ee566ec9d9143bbfc21d387882250699be76afd288796341eb764ef"
#: how many abstracts of BC5CDR dev the check annotates
DOCUMENTS = 100


def first_documents(path: Path, count: int) -> str:
    """The first ``count`` documents of a PubTator file, as the file writes them."""
    blocks = [b for b in path.read_text(encoding="utf-8").split("\n\n") if b.strip()]
    return "\n\n".join(blocks[:count]) + "\n\n"


def test_the_declared_pipeline_gives_the_output_of_the_tree_before_it(tmp_path):
    corpus = data_dir() / "bc5cdr" / "CDR_DevelopmentSet.PubTator.txt"
    if not corpus.is_file():
        pytest.skip(f"{corpus} is not here (the shared data folder)")
    source = tmp_path / "dev100.pubtator"
    source.write_text(first_documents(corpus, DOCUMENTS), encoding="utf-8")
    out = tmp_path / "dev100.bioc.xml"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "E2E_LINKER_CACHE": str(tmp_path / "cache")}
    run = subprocess.run([sys.executable, "-m", "e2e_linker", "annotate", str(source), "-o",
                          str(out), "--format", "bioc", "--replace", "--index", "packed"],
                         capture_output=True, text=True, env=env, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    digest = hashlib.sha256(out.read_bytes()).hexdigest()
    assert digest == DEV_100_SHA256, (
        "the shipped pipeline's output on BC5CDR dev changed; if that is meant, say why and "
        "update DEV_100_SHA256")
