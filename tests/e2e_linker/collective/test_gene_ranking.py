"""GeneRanking: a name-only span's concepts by names and species."""

from __future__ import annotations

from e2e_linker.collective.gene_ranking import GeneRanking
from e2e_linker.lexical.sieves import NameDictionary

TAXA = {"7157": "9606", "22059": "10090", "2768677": "7227"}


def _genes() -> GeneRanking:
    """Over a hand-made gene KB with its compact keys."""
    from data_tools.kb import KB, Concept
    from e2e_linker.lexical.sieve_stack import ontology_key_index

    kb = KB([Concept("23411", "SIRT1", ["sirtuin 1"], "Gene", "NCBI Gene", taxon="9606"),
             Concept("93759", "Sirt1", ["Sir2a"], "Gene", "NCBI Gene", taxon="10090"),
             Concept("6469", "SHH", ["HHG1"], "Gene", "NCBI Gene", taxon="9606"),
             Concept("20423", "Shh", ["Hx"], "Gene", "NCBI Gene", taxon="10090"),
             Concept("5599", "MAPK8", ["JNK1"], "Gene", "NCBI Gene", taxon="9606"),
             Concept("26419", "Mapk8", ["JNK1"], "Gene", "NCBI Gene", taxon="10090")])
    return GeneRanking(NameDictionary.from_kb(kb), ontology_key_index(kb), kb.taxa(),
                       kb.concepts)


def test_species_first_reorders_gene_concepts_in_their_places():
    genes = GeneRanking(taxa=TAXA)
    ranked = [("22059", 0.9), ("D000001", 0.85), ("7157", 0.9), ("2768677", 0.5)]
    assert genes.species_first(ranked, ["9606"]) == [
        ("7157", 0.9), ("D000001", 0.85), ("22059", 0.9), ("2768677", 0.5)]
    assert genes.species_first(ranked, ["10090", "9606"]) == ranked
    assert GeneRanking().taxa is None  # no taxa: no preference


def test_a_name_only_type_prefers_the_concept_whose_primary_name_the_text_is():
    """"NBN" is NBN's own symbol and an alias of another human gene: the gene whose primary
    name the text is comes first; "p62" is the symbol of none of its genes: the one with more
    names comes first."""
    from types import SimpleNamespace

    names = NameDictionary([("p62", "2965"), ("p62", "8878"), ("NBN", "4361"),
                            ("NBN", "4683"), ("NBN", "99")],
                           dict.fromkeys(("2965", "8878", "4361", "4683", "99"), "Gene"))

    def gene(name: str, n_names: int, source: str = "NCBI Gene") -> SimpleNamespace:
        return SimpleNamespace(name=name, source=source,
                               all_names=lambda: [name] + ["alias"] * (n_names - 1))

    concepts = {"2965": gene("GTF2H1", 3), "8878": gene("SQSTM1", 5), "4361": gene("MRE11", 9),
                "4683": gene("NBN", 2),
                "99": gene("NBN", 1, "corpus")}  # mined: its name is a mention's text
    genes = GeneRanking(names, concepts=concepts)
    assert genes.name_ranking("p62", "Gene") == [("8878", 0.0), ("2965", 0.0)]  # more names
    assert genes.name_ranking("nbn", "Gene") == [("4683", 0.0), ("4361", 0.0), ("99", 0.0)]
    assert GeneRanking(names).name_ranking("NBN", "Gene") == [
        ("4361", 0.0), ("4683", 0.0), ("99", 0.0)]  # without the concepts: the KB's order


def test_genes_the_training_mentions_link_a_name_to_come_first():
    """"TAK1" is an alias of two human genes (NR2C2, MAP3K7) and of their mouse orthologs:
    training mentions "TAK1" linked to human MAP3K7 put it before the genes with more names;
    the mouse genes keep their names' order (a gene of another species is not followed: that
    gained within noise, docs/decisions/0043-genes-by-training-usage.md); without usage, or
    with none for the text, the order is the names' own."""
    from data_tools.kb import KB, Concept

    kb = KB([Concept("7181", "NR2C2", ["TAK1", "TR4", "TR2R1"], "Gene", "NCBI Gene",
                     taxon="9606"),
             Concept("6885", "MAP3K7", ["TAK1"], "Gene", "NCBI Gene", taxon="9606"),
             Concept("22026", "Nr2c2", ["TAK1", "TR4", "Tr2-11"], "Gene", "NCBI Gene",
                     taxon="10090"),
             Concept("26409", "Map3k7", ["TAK1"], "Gene", "NCBI Gene", taxon="10090")])
    names = NameDictionary.from_kb(kb)
    used = {("tak1", "Gene"): ["6885"]}

    def usage(text: str, type_: str) -> list[str]:
        return used.get((text.lower(), type_), [])

    plain = GeneRanking(names, taxa=kb.taxa(), concepts=kb.concepts)
    learned = GeneRanking(names, taxa=kb.taxa(), concepts=kb.concepts, usage=usage)
    assert [c for c, _ in plain.name_ranking("TAK1", "Gene")] == \
        ["7181", "22026", "6885", "26409"]
    assert [c for c, _ in learned.name_ranking("TAK1", "Gene")] == \
        ["6885", "7181", "22026", "26409"]
    assert [c for c, _ in learned.species_first(learned.name_ranking("Tak1", "Gene"),
                                                ["10090"])] == ["22026", "26409", "6885",
                                                                "7181"]
    assert learned.name_ranking("TR4", "Gene") == plain.name_ranking("TR4", "Gene")


def test_a_mention_names_its_own_species():
    """In a document about patients, "mouse" right before a gene, a gene written as only the
    mouse symbol is written ("Shh"; "SHH" is no cue), or a mutant allele after it puts mouse
    first for that mention only; a document that does not name mice gets no mouse from the
    symbol alone."""
    genes = _genes()
    shh = genes.name_ranking("Shh", "Gene")
    doc = ("Patients and patients with SHH variants; Shh and SHH in mice; mouse Sirt1; "
           "Mapk8(-/-) and JNK1.")

    def first(mention: str, preferred: list[str], nth: int = 0) -> list[str]:
        start = -1
        for _ in range(nth + 1):
            start = doc.index(mention, start + 1)
        ranked = genes.name_ranking(mention, "Gene")
        return genes.mention_species(ranked, mention, doc, start, start + len(mention),
                                      preferred)

    human_first = ["9606", "10090"]
    assert first("SHH", human_first) == human_first
    assert first("Sirt1", human_first) == ["10090", "9606"]  # "mouse Sirt1"
    assert first("Shh", human_first) == ["10090", "9606"]  # the mouse symbol as written
    assert first("Shh", ["9606"]) == ["9606"]  # ... in a document that names no mice
    assert first("JNK1", human_first) == human_first
    ranked = genes.name_ranking("JNK1", "Gene")
    start = doc.index("Mapk8")
    assert genes.mention_species(ranked, "JNK1", doc, start - 0, start + 5, human_first) \
        == ["10090", "9606"]  # an allele mark after the span
    assert genes.species_first(shh, ["10090", "9606"])[0][0] == "20423"


def test_a_fly_or_yeast_gene_needs_its_species_named():
    """"filamin" names only a fly gene: in an abstract naming no species it is no gene
    mention; in one that names flies it is. Mouse genes need no naming (their names are the
    human ones written otherwise), and a mention with a gene of a named species stays."""
    from data_tools.species import preferred_taxa

    genes = GeneRanking(taxa={**TAXA, "851348": "559292"})
    plain = preferred_taxa("Filamin binds Kv4.2 in patients.")
    flies = preferred_taxa("Filamin binds Kv4.2 in Drosophila.")
    yeast = preferred_taxa("COS7 in budding yeast.")
    assert genes.of_unnamed_species(["2768677"], plain)
    assert not genes.of_unnamed_species(["2768677"], flies)
    assert genes.of_unnamed_species(["851348"], plain)
    assert not genes.of_unnamed_species(["851348"], yeast)
    assert not genes.of_unnamed_species(["22059"], plain)             # mouse
    assert not genes.of_unnamed_species(["7157"], plain)              # human
    assert not genes.of_unnamed_species(["2768677", "7157"], plain)   # one of them human
    assert not genes.of_unnamed_species(["D000001"], plain)           # no taxon: no gene
    assert not genes.of_unnamed_species([], plain)
    assert not GeneRanking().of_unnamed_species(["2768677"], plain)   # no taxa known


def test_a_text_is_ranked_once_and_each_caller_gets_its_own_list():
    """The name-only ranking of a text is remembered (selection and linking ask for it
    again), and so are a concept's names; a caller changing its list changes no later one."""
    genes = _genes()
    calls = []
    lookup = genes.names.lookup

    def counted(*args, **kwargs):
        calls.append(args)
        return lookup(*args, **kwargs)

    genes.names.lookup = counted
    first = genes.name_only_ranking("Sirt1", "Gene")
    assert first == [("23411", 0.0), ("93759", 0.0)]
    first.clear()
    assert genes.name_only_ranking("Sirt1", "Gene") == [("23411", 0.0), ("93759", 0.0)]
    assert len(calls) == 1
    assert genes.facts("93759") == genes.facts("93759")
    assert (genes.facts("93759").name, genes.facts("93759").key, genes.facts("93759").count,
            genes.facts("93759").keys) == ("Sirt1", "sirt1", 2, frozenset({"sirt1", "sir2a"}))


def test_another_genes_official_symbol_written_in_the_document_is_no_evidence_for_an_alias():
    """ACKR2 has the aliases CCR9 and CCR10, each also the official symbol of a gene of its
    own: a document listing "CCR9, CCR10" names CCR9 and CCR10, not ACKR2, so "CCR10" keeps
    its own gene; a name of ACKR2 no other gene holds ("CCBP2") still moves ACKR2 first."""
    from data_tools.kb import KB, Concept
    from e2e_linker.collective.gene_ranking import document_words

    kb = KB([Concept("1238", "ACKR2", ["CCR10", "CCR9", "D6", "CCBP2"], "Gene", "NCBI Gene",
                     taxon="9606"),
             Concept("2826", "CCR10", ["GPR2"], "Gene", "NCBI Gene", taxon="9606"),
             Concept("10803", "CCR9", ["GPR28"], "Gene", "NCBI Gene", taxon="9606")])
    genes = GeneRanking(NameDictionary.from_kb(kb), taxa=kb.taxa(), concepts=kb.concepts)
    ranked = genes.name_ranking("CCR10", "Gene")
    assert ranked[0][0] == "2826"  # its official symbol first
    listed = document_words("Receptors CCR3, CCR4, CCR9 and CCR10 were expressed.")
    assert genes.named_in_document_first(ranked, "CCR10", listed)[0][0] == "2826"
    other_name = document_words("The decoy receptor CCBP2 binds CCR10 ligands.")
    assert genes.named_in_document_first(ranked, "CCR10", other_name)[0][0] == "1238"
