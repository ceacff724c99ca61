"""Validate a BioC XML file against the BioC DTD (tests/fixtures/BioC.dtd) with lxml."""

from __future__ import annotations

from pathlib import Path

from lxml import etree

DTD = Path(__file__).parents[1] / "fixtures" / "BioC.dtd"


def validate_bioc(path: Path) -> None:
    """Assert that ``path`` is valid BioC (read without entities, DTD loading or network)."""
    parser = etree.XMLParser(load_dtd=False, no_network=True, resolve_entities=False,
                             huge_tree=False)
    dtd = etree.DTD(str(DTD))
    assert dtd.validate(etree.parse(str(path), parser)), dtd.error_log.filter_from_errors()[:5]
