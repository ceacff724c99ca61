"""Corpus formats: PubTator, BioC XML and BioC JSON, read as streams of Documents.

``read_documents`` and ``open_writer`` are the only entry points the rest of the project uses;
the format is detected from the file name or, failing that, from the first bytes.
"""

from data_tools.formats.detect import (
    FORMATS,
    detect_format,
    open_writer,
    read_collection_info,
    read_documents,
    write_documents,
)

__all__ = [
    "FORMATS",
    "detect_format",
    "open_writer",
    "read_collection_info",
    "read_documents",
    "write_documents",
]
