"""`linker normalize INPUT... -o OUTPUT`: link given mention spans to KB concepts.

The input's annotations give the spans (gold spans, or another tool's NER); the output is the
same documents with every annotation's ``concept_ids`` (namespaced, ``MESH:D013629``,
``NCBIGene:672``; none when nothing matches: NIL), ``link_score``, the record's infons
(concept name, a gene's species), a ``candidates`` infon (top-k) and a ``confidence`` infon
(how likely the answer is right: :mod:`e2e_linker.normalizer.given_mentions`) filled in. Gene and
species mentions are linked by their names against the annotate model's KB, the others by
the text normalizer (:mod:`e2e_linker.normalizer.given_mentions`). Nothing else is changed.
"""

from __future__ import annotations

import click

from e2e_linker.kb_search.concept_search import MODES
from e2e_linker.normalizer.normalizer import DEFAULT_NIL_THRESHOLD


@click.command("normalize")
@click.argument("inputs", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="Output file (format from --format or its extension).")
@click.option("--model", "model", default=None,
              help="Normalizer model directory, Hugging Face folder or name "
                   "(default: the embedded default model).")
@click.option("--linker-model", default=None,
              help="Annotate model directory whose KB links Gene and Species mentions by their "
                   "names (default: the embedded one).")
@click.option("--kb", default=None,
              help="KB spec for every mention (default: each model's own KB).")
@click.option("--species", default=None,
              help="Species of the Gene mentions, before the ones a document names: an NCBI "
                   "Taxonomy ID (10090) or a name (mouse). Default: each document's, else "
                   "human.")
@click.option("--search", "mode", type=click.Choice(MODES), default=None,
              help="Search mode (default: the model's, else D-T+OD-T).")
@click.option("--train-mentions", multiple=True,
              help="Corpus (bc5cdr:train or a path) whose mentions form the D pool; repeatable.")
@click.option("--model-mentions/--no-model-mentions", default=True, show_default=True,
              help="Without --train-mentions, use the model directory's mentions.tsv as D.")
@click.option("--extra-synonyms", type=click.Path(exists=True, dir_okay=False), default=None,
              help="TSV of concept_id<TAB>name added to the ontology at search time.")
@click.option("--top-k", type=int, default=5, show_default=True,
              help="Candidates written to the 'candidates' infon.")
@click.option("--nil-threshold", type=click.FloatRange(0, 1), default=DEFAULT_NIL_THRESHOLD,
              show_default=True,
              help="Below this link score a mention gets no concept (NIL: no ID, '-1' in "
                   "PubTator), as does a link sharing too little of the mention's spelling "
                   "below a higher bar; 0 gives every mention its best concept.")
@click.option("--batch-size", type=int, default=256, show_default=True,
              help="Texts per encoder batch.")
@click.option("--composite", type=click.Choice(["auto", "always", "never"]), default="auto",
              show_default=True, help="Splitting of composite mentions.")
@click.option("--abbreviations/--no-abbreviations", default=True, show_default=True,
              help="Expand short forms defined in the same document.")
@click.option("--inferred-abbreviations/--no-inferred-abbreviations", default=True,
              show_default=True,
              help="Also expand one-letter definitions ('testosterone (T)') and undefined short "
                   "forms that match another mention of the document.")
@click.option("--lexical/--no-lexical", default=True, show_default=True,
              help="Take a KB concept whose names equal the mention up to case, spaces and "
                   "punctuation ('SR 48,968' = 'SR 48968'), unless training mentions have it.")
@click.option("--salt-free/--no-salt-free", default=True, show_default=True,
              help="With --lexical: a chemical name ending in a salt word also matches its base "
                   "name (\"Tiapride Hydrochloride\" for \"tiapride\").")
@click.option("--type-aware/--no-type-aware", default=True, show_default=True,
              help="Search only concepts of the annotation's type when the KB has it.")
@click.option("--format", "fmt", type=click.Choice(["bioc", "biocjson", "pubtator"]),
              default=None, help="Output format (default: from the extension).")
@click.option("--device", type=click.Choice(["cpu", "cuda"]), default=None)
@click.option("--cache-dir", default=None, help="Where KB vectors are cached.")
@click.option("--index", "index_kind", type=click.Choice(["auto", "exact", "packed"]),
              default="auto", show_default=True,
              help="Ontology text search: exact over every vector, or packed (the model's "
                   "shipped shortlist index, encoding only shortlisted texts); auto: packed "
                   "while the ontology is not fully encoded, then exact.")
def command(inputs: tuple[str, ...], output: str, model: str | None, linker_model: str | None,
            kb: str | None, species: str | None, mode: str | None,
            train_mentions: tuple[str, ...], model_mentions: bool,
            extra_synonyms: str | None, top_k: int, nil_threshold: float, batch_size: int,
            composite: str, abbreviations: bool, inferred_abbreviations: bool, lexical: bool,
            salt_free: bool, type_aware: bool, fmt: str | None, device: str | None,
            cache_dir: str | None, index_kind: str = "auto") -> None:
    """Normalize the annotations of INPUT files (PubTator, BioC XML, BioC JSON)."""
    import itertools

    from data_tools.formats import open_writer, read_collection_info, read_documents
    from e2e_linker.console import say
    from e2e_linker.errors import UserError
    from e2e_linker.normalizer.given_mentions import GivenMentionLinker
    from e2e_linker.normalizer.loading import load_normalizer

    if top_k < 1 or batch_size < 1:
        raise UserError("--top-k and --batch-size must be at least 1")
    from e2e_linker.jobs.output_checks import check_output_target  # before the model loads
    check_output_target(inputs, output, directory=False)  # -o: not an input, writable, room
    if device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise UserError("--device cuda asked for, but no CUDA device is available")
    options = {"top_k": top_k, "type_aware": type_aware,
               "composite": composite, "abbreviations": abbreviations,
               "inferred_abbreviations": inferred_abbreviations, "lexical": lexical,
               "salt_free": salt_free, "batch_size": batch_size}
    if mode is not None:
        options["mode"] = mode

    def text_normalizer():
        return load_normalizer(model, kb, device, cache_dir, options, train_mentions,
                               model_mentions, extra_synonyms, index_kind,
                               note=lambda line: click.echo(line, err=True))

    def annotator():
        from e2e_linker.api import Linker

        return Linker.load(linker_model, kb=kb, device=device, cache_dir=cache_dir).annotator

    linker = GivenMentionLinker(text_normalizer, annotator, nil_threshold)
    if species is not None:
        linker.taxa_of(species)  # an unknown species is an error before anything is read
    docs = itertools.chain.from_iterable(read_documents(p) for p in inputs)
    blocks = iter(lambda: list(itertools.islice(docs, 2000)), [])
    info = read_collection_info(inputs[0])
    # the first block is linked before the output opens: a model that fails to load leaves
    # no empty output behind
    linked = (linker.normalize(block, [species] * len(block)) for block in blocks)
    first = next(linked, [])
    n_docs = 0
    with open_writer(output, fmt, collection_info=info) as writer:
        for block in itertools.chain([first], linked):
            for doc in block:
                writer.write(doc)
                n_docs += 1
    search = f", search {linker.normalizer.options.mode}" if linker.normalizer else ""
    # a successful run is silent unless watched (e2e_linker/console.py)
    say(f"normalized {linker.linked} mentions in {n_docs} documents ({linker.nil} with no "
        f"concept{search}) -> {output}")
