"""The table of IDs the vocabulary replaced: reading and writing it, the lookup scoring uses,
the command that derives it, and the shipped table held to the default KB's vocabulary."""

from __future__ import annotations

import pytest

from e2e_linker.errors import UserError
from e2e_linker.replaced_ids import (
    TABLE,
    current_id,
    main,
    read_table,
    shipped_table,
    table_rows,
    write_table,
)


def test_current_id_maps_a_listed_id_and_keeps_any_other():
    table = {"C065179": "D000069059"}
    assert current_id("C065179", table) == "D000069059"
    assert current_id("D000069059", table) == "D000069059"
    assert current_id("C047426", table) == "C047426"
    assert current_id("MESH:C065179", table) == "MESH:C065179"  # the bare form only
    # the shipped table: BC5CDR's atorvastatin, a supplementary concept MeSH promoted
    assert current_id("C065179") == "D000069059"
    assert current_id("D013629") == "D013629"


def test_a_written_table_reads_back_with_its_origin_in_its_header(tmp_path):
    path = tmp_path / "replaced.tsv"
    write_table([("C065179", "D000069059", "Atorvastatin")], path, ["bc5cdr:train"], "bc5cdr")
    lines = path.read_text().splitlines()
    assert lines[0].startswith("# MeSH IDs that bc5cdr:train cite and the KB 'bc5cdr' lacks")
    assert "python -m e2e_linker.replaced_ids" in lines[0]
    assert lines[2] == "C065179\tD000069059\tAtorvastatin"
    assert read_table(path) == {"C065179": "D000069059"}


def test_a_damaged_table_is_one_error_naming_its_line(tmp_path):
    path = tmp_path / "replaced.tsv"
    path.write_text("# header\nC065179\tD000069059\tAtorvastatin\nC055162\n")
    with pytest.raises(UserError, match=r"replaced.tsv: line 3 is not 'old ID<TAB>current ID"):
        read_table(path)


def test_the_command_derives_the_table_from_corpora_and_a_kb(tmp_path, monkeypatch, capsys):
    """``python -m e2e_linker.replaced_ids``: the rule of the mined names
    (:func:`e2e_linker.collective.model_kb.replacements`) on the corpora's IDs."""
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("1|t|Atorvastatin and gemcitabine.\n1|a|\n"
                      "1\t0\t12\tAtorvastatin\tChemical\tC065179\n"
                      "1\t17\t29\tgemcitabine\tChemical\tC056507\n\n")
    vocabulary = tmp_path / "kb.tsv"
    vocabulary.write_text("D000069059\tAtorvastatin\nD013629\tTamoxifen\n")
    spec = f"tsv:{vocabulary}"
    assert table_rows([str(corpus)], spec) == [("C065179", "D000069059", "Atorvastatin")]
    out = tmp_path / "table.tsv"
    monkeypatch.setattr("e2e_linker.replaced_ids.CORPORA", (str(corpus),))
    main(["--kb", spec, "-o", str(out)])
    assert read_table(out) == {"C065179": "D000069059"}
    assert f"KB '{spec}'" in out.read_text().splitlines()[0]
    assert "1 replaced IDs" in capsys.readouterr().out


def test_the_shipped_table_maps_ids_the_default_kb_lacks_to_ids_it_holds():
    """Each old ID of ``replaced_ids.tsv`` is one the default KB's vocabulary lacks and each
    current ID one it holds; no current ID is itself replaced (one step is enough)."""
    from tests.helpers.default_vocabulary import held

    table = shipped_table()
    assert table == read_table(TABLE) and len(table) > 40
    assert "bc5cdr:test" in TABLE.read_text().splitlines()[0]
    assert [old for old in table if held(old)] == []
    assert [new for new in table.values() if not held(new)] == []
    assert not set(table.values()) & set(table)
