"""Opening corpus files: gzip by magic bytes, BOM and CRLF dropped, strict UTF-8 with file and
line named."""

from __future__ import annotations

import gzip

import pytest

from data_tools.documents import FormatError
from data_tools.formats.textio import head_bytes, iter_lines, iter_lines_checked, read_text

CONTENT = "first line\r\nsecond \u2028 line\nthird"


@pytest.fixture(params=["plain", "gzip"])
def corpus(request, tmp_path):
    data = b"\xef\xbb\xbf" + CONTENT.encode("utf-8")
    path = tmp_path / "corpus.txt"  # the name never says gzip: the magic bytes do
    path.write_bytes(gzip.compress(data) if request.param == "gzip" else data)
    return path


def test_lines_without_bom_or_line_ends_and_only_newline_splits(corpus):
    assert list(iter_lines(corpus)) == [(1, "first line"), (2, "second \u2028 line"),
                                        (3, "third")]
    assert read_text(corpus) == "first line\nsecond \u2028 line\nthird"
    assert head_bytes(corpus, 8) == b"\xef\xbb\xbffirst"


def test_bad_utf8_names_file_line_and_byte(tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes(b"ok\nnaive caf\xe9\nok again\n")
    with pytest.raises(FormatError, match=r"line 2: not valid UTF-8 \(byte 0xe9 at column 10\)"):
        list(iter_lines(path))
    with pytest.raises(FormatError, match=r"latin1.txt: line 2: not valid UTF-8 \(byte 0xe9\)"):
        read_text(path)
    # the checked variant keeps going: the bad line comes with its error and a readable text
    checked = list(iter_lines_checked(path))
    assert [(n, line, error is None) for n, line, error in checked] == [
        (1, "ok", True), (2, "naive caf\ufffd", False), (3, "ok again", True)]


def test_truncated_gzip_is_a_format_error(tmp_path):
    path = tmp_path / "cut.txt.gz"
    path.write_bytes(gzip.compress("".join(f"line {i}\n" for i in range(10_000)).encode())[:200])
    with pytest.raises(FormatError, match="cannot read compressed data"):
        list(iter_lines(path))
    with pytest.raises(FormatError, match="cannot read compressed data"):
        read_text(path)
    assert isinstance(head_bytes(path), bytes)
