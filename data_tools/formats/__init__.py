"""Corpus formats: PubTator, BioC XML and BioC JSON, read as streams of Documents.

``read_documents`` and ``open_writer`` are the only entry points the rest of the project uses;
the format is detected from the file name or, failing that, from the first bytes. Readers
stream, raise ``FormatError`` naming the file and line/document, and accept a BOM, CRLF and
gzip; writers are atomic (no partial file ever) and byte-stable. Module map: ``detect`` (entry
points), ``pubtator``, ``biocxml``, ``biocjson``, ``bioc_model`` (BioC dict ⇄ Document, shared
validation), ``ids`` (ID strings as written), ``textio`` (decoding), ``atomic`` (temp + rename).
"""

from data_tools.formats.detect import (
    FORMATS,
    detect_format,
    expand_inputs,
    open_writer,
    read_collection_info,
    read_documents,
    read_records,
    write_documents,
)

__all__ = [
    "FORMATS",
    "detect_format",
    "expand_inputs",
    "open_writer",
    "read_collection_info",
    "read_documents",
    "read_records",
    "write_documents",
]
