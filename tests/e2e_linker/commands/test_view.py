"""``linker view`` through its public door: the command writes a page, and a real headless
Chromium renders it — not blank, the mention types' colours and the error marks on screen."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from PIL import Image

from e2e_linker.viewer.html_page import PALETTE
from tests.helpers.chromium import screenshot

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "bc5cdr_sample.bioc.xml"
PREDICTED = """\
PMID1|t|Famotidine-associated delirium.
PMID1|a|Lidocaine caused hypotension in rats.
PMID1\t0\t10\tFamotidine\tChemical\tD015738
PMID1\t22\t30\tdelirium\tDisease\tD003693
PMID1\t32\t41\tLidocaine\tChemical\tD008012
PMID1\t64\t68\trats\tDisease\tD999999

"""


def linker(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "e2e_linker", *args], capture_output=True,
                          text=True)


def hex_rgb(colour: str) -> tuple[int, int, int]:
    return tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))


def test_the_page_renders_in_chromium_with_highlights_and_error_marks(tmp_path):
    gold = tmp_path / "gold.pubtator"
    gold.write_text(PREDICTED.replace("PMID1\t64\t68\trats\tDisease\tD999999\n",
                                      "PMID1\t49\t60\thypotension\tDisease\tD007022\n"))
    pred = tmp_path / "pred.pubtator"
    pred.write_text(PREDICTED)
    page = tmp_path / "page.html"
    done = linker("view", str(pred), "--gold", str(gold), "--no-names", "-o", str(page))
    assert done.returncode == 0, done.stderr
    html = page.read_text()
    assert "TP 3 · FP 1 · FN 1" in html and "https://meshb.nlm.nih.gov/record/ui?ui=D015738" in html
    assert "http" not in html.replace("https://meshb.nlm.nih.gov/record/ui?ui=", "")

    image = Image.open(screenshot(page, tmp_path / "page.png")).convert("RGB")
    colours = {rgb for _, rgb in image.getcolors(maxcolors=1 << 20)}
    assert len(colours) > 20, "the screenshot is blank"
    assert hex_rgb(PALETTE[0]) in colours and hex_rgb(PALETTE[1]) in colours  # Chemical, Disease
    assert (221, 0, 0) in colours  # the dashed outline of a false positive / negative (#d00)


def test_the_shipped_example_renders_with_its_names(tmp_path):
    page = tmp_path / "example.html"
    done = linker("view", str(EXAMPLE), "-o", str(page), "--max-docs", "2")
    assert done.returncode == 0, done.stderr
    assert "wrote 2 documents" in done.stderr
    # D003693's preferred name, from the default model's KB (the text says "delirium")
    assert 'ui=D003693">D003693</a> Delirium' in page.read_text()


def test_a_missing_file_is_one_line_not_a_traceback(tmp_path):
    done = linker("view", str(tmp_path / "nope.xml"), "-o", str(tmp_path / "p.html"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
