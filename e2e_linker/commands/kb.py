"""``linker kb build|pack|info|prune|check``: the KB index as something a user can prepare and look
at, and a user's own KB file checked before it is used.

``linker kb build`` does ahead of time what the first ``linker annotate`` would do: encode every
name of the model's KB with its entity tower (names/s and time left on a progress bar,
checkpointed, so a killed build resumes) and build the approximate index that ``--index`` picks
(with its own progress bar). Two builds started at once on an empty cache leave one valid cache
(the second waits for the first). ``linker kb pack`` stores a compact IVF-PQ index of the
KB inside a model directory, so that the model's first runs elsewhere encode only shortlisted
names (:mod:`e2e_linker.kb_search.packed_index`). ``linker kb info`` lists what a cache folder
holds, each list once (a partly encoded one with its fill ratio); ``--verify`` checks every
file against its checksums (:mod:`e2e_linker.kb_search.integrity`); ``linker kb prune`` deletes
what an earlier version left and no version reads (:func:`unread_folders`). ``linker kb check FILE``
reads a ``tsv:`` KB file as ``--kb tsv:FILE`` would (:func:`data_tools.kb_loaders.read_tsv_rows`)
and says what it read, without loading a model.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

import click

from e2e_linker.kb_search.backends import SEARCH_KINDS

#: what `kb build` can prepare: every name encoded (the packed index needs no preparing)
FULL_KINDS = tuple(kind for kind in SEARCH_KINDS if kind != "packed")
#: how many rows with problems ``kb check`` lists (it counts them all)
CHECK_SHOWN = 10
#: a namespaced concept ID: ``OMIM:613162``, ``NCBITaxon:9606``


@click.group("kb")
def command() -> None:
    """Prepare and inspect the cached KB index (vectors + search index); check a KB file."""


@command.command("build")
@click.argument("spec", required=False)
@click.option("--model", "model_dir", default=None, type=click.Path(exists=True, file_okay=False),
              help="Model directory whose entity tower encodes the names (default: embedded).")
@click.option("--cache-dir", default=None, help="Cache folder (default: $E2E_LINKER_CACHE).")
@click.option("--index", "index_kind", type=click.Choice(FULL_KINDS), default="auto",
              show_default=True, help="Search index to build, as `linker annotate --index`.")
@click.option("--kb-memory-budget", type=float, default=None,
              help="MB the index may hold in memory; drives --index auto.")
@click.option("--device", type=click.Choice(["cpu", "cuda"]), default=None)
def build(spec: str | None, model_dir: str | None, cache_dir: str | None, index_kind: str,
          kb_memory_budget: float | None, device: str | None) -> None:
    """Encode and index SPEC (default: the model's KB) for `linker annotate`."""
    from e2e_linker.collective.loading import build_entity_index, pick_device
    from e2e_linker.collective.model import CollectiveLinker
    from e2e_linker.collective.model_dir import default_linker_dir
    from e2e_linker.jobs.model_guard import loading_model
    from e2e_linker.kb_search.cache import default_cache_dir
    from e2e_linker.kb_search.cache_report import folder_bytes

    directory = Path(model_dir) if model_dir else default_linker_dir()
    start = time.perf_counter()
    with loading_model(model_dir):
        model = CollectiveLinker.load(directory, device=pick_device(device))
    knowledge, index = build_entity_index(directory, model, spec, cache_dir, index_kind,
                                          kb_memory_budget, use_packed=False)
    seconds = time.perf_counter() - start
    root = Path(cache_dir) if cache_dir else default_cache_dir()
    click.echo(f"KB ready: {len(knowledge):,} concepts, {len(index):,} names, index "
               f"{index.describe()}, {seconds:.1f} s; cache {root} "
               f"({folder_bytes(root) / 2**20:,.0f} MiB)")


@command.command("pack")
@click.option("--model", "model_dir", default=None, type=click.Path(exists=True, file_okay=False),
              help="Model directory to pack the KB index into (default: embedded).")
@click.option("--normalizer", is_flag=True,
              help="Pack a normalizer model's ontology texts (`linker normalize`) instead of a "
                   "collective model's KB names (`linker annotate`).")
@click.option("--cache-dir", default=None, help="Cache folder (default: $E2E_LINKER_CACHE).")
@click.option("--pq-bytes", type=click.IntRange(min=1), default=16, show_default=True,
              help="Bytes per name (8-bit sub-quantizers; must divide the vector size).")
@click.option("--nlist", type=click.IntRange(min=1), default=None,
              help="Inverted lists (default: 4·√names, a power of two).")
@click.option("-o", "--output", default=None, type=click.Path(),
              help="Write here instead of MODEL/kb_index.safetensors (never over a model file).")
@click.option("--device", type=click.Choice(["cpu", "cuda"]), default=None)
def pack(model_dir: str | None, normalizer: bool, cache_dir: str | None, pq_bytes: int,
         nlist: int | None, output: str | None, device: str | None) -> None:
    """Ship the KB index with the model: a packed IVF-PQ index of every name's vector.

    With it, `linker annotate` on an empty cache encodes only the names its mentions
    shortlist, instead of the whole KB, before the first output.
    """
    from e2e_linker.collective.loading import pack_linker_index, pick_device
    from e2e_linker.collective.model import CollectiveLinker
    from e2e_linker.collective.model_dir import default_linker_dir
    from e2e_linker.jobs.model_guard import loading_model

    start = time.perf_counter()
    if normalizer:
        from e2e_linker.normalizer.normalizer_dir import (
            default_normalizer_dir,
            pack_normalizer_index,
        )

        if output is not None:  # before the model loads
            output = _pack_target(Path(model_dir) if model_dir else default_normalizer_dir(),
                                  output)
        path = pack_normalizer_index(model_dir, cache_dir, pq_bytes, nlist, output)
    else:
        directory = Path(model_dir) if model_dir else default_linker_dir()
        if output is not None:  # before the model loads
            output = _pack_target(directory, output)
        with loading_model(model_dir):
            model = CollectiveLinker.load(directory, device=pick_device(device))
        path = pack_linker_index(directory, model, cache_dir, pq_bytes, nlist, output)
    click.echo(f"packed KB index: {path} ({path.stat().st_size / 2**20:,.1f} MiB, "
               f"{time.perf_counter() - start:.0f} s)")


def _pack_target(directory: Path, output: str) -> str:
    """``kb pack -o``, checked by the output guard before the model loads: never one of the
    model's own files (its weights, its KB, the normalizer folder inside it) except an earlier
    packed index, which is what a pack replaces; never a FIFO or device. Returned with its
    symlinks followed: the packed writer renames over the path it gets, and a link must stay a
    link (the file it points to is replaced)."""
    from data_tools.formats.atomic import write_target
    from e2e_linker.collective.model_dir import PACKED_INDEX_FILE
    from e2e_linker.jobs.output_checks import check_output_target

    model_files = [p for p in directory.iterdir() if p.name != PACKED_INDEX_FILE]
    check_output_target(model_files, output, directory=False, room_for_inputs=False)
    return str(write_target(output))


@command.command("info")
@click.option("--cache-dir", default=None, help="Cache folder (default: $E2E_LINKER_CACHE).")
@click.option("--json", "as_json", is_flag=True, help="Print the listing as JSON.")
@click.option("--verify", is_flag=True,
              help="Check every cache file against its checksums (reads the whole cache) and "
                   "report each one ok, damaged or unverified; exit code 2 when any is "
                   "damaged.")
def info(cache_dir: str | None, as_json: bool, verify: bool) -> None:
    """List what the KB cache holds: encoders, names, KB matrices (full, or partly encoded on
    demand), indexes, compiled KBs, size on disk."""
    from e2e_linker.compiled_kb.store import list_compiled
    from e2e_linker.defaults import DEFAULT_MODEL_DIR
    from e2e_linker.errors import UserError
    from e2e_linker.kb_search.cache_report import describe_cache, verify_cache
    from e2e_linker.kb_search.shipped import verify_tree

    root = _cache_root(cache_dir)
    entries = describe_cache(root) if root.is_dir() else []
    compiled = list_compiled(root)
    checked = verify_cache(root) if verify and root.is_dir() else []
    shipped = [{"file": str(v.path), "state": v.state, "why": v.why}
               for v in verify_tree(DEFAULT_MODEL_DIR)] if verify else []
    if as_json:
        listing: dict = {"cache": str(root), "entries": entries, "compiled_kbs": compiled}
        if verify:
            listing["verify"] = checked
            listing["verify_shipped"] = shipped
        click.echo(json.dumps(listing, indent=2))
    elif not entries and not compiled:
        click.echo(f"{root}: empty (the first `linker annotate` or `linker kb build` fills it)")
    else:
        click.echo(f"cache {root}")
        for entry in entries:
            _echo_entry(entry)
        for item in compiled:
            click.echo(f"- compiled KB {item['spec'] or '(not recorded)'}: "
                       + (f"{item['concepts']:,} concepts, {item['names']:,} names, "
                          if item["state"] == "ok" else
                          f"{item['state']}, " if item["stale"] else
                          f"damaged: {item['state']} (the next load compiles it again), ")
                       + f"{item['bytes'] / 2**20:,.1f} MiB, built {item['built_at'] or '?'} "
                       f"({item['key']})")
        if verify:
            click.echo(f"verify: {len(checked)} files")
            for item in checked:
                click.echo(f"  {item['state']:<10}  {item['file']}"
                           + (f": {item['why']}" if item["why"] else ""))
    if verify and not as_json:
        click.echo(f"verify shipped: {len(shipped)} files ({DEFAULT_MODEL_DIR})")
        for item in shipped:
            click.echo(f"  {item['state']:<10}  {item['file']}"
                       + (f": {item['why']}" if item["why"] else ""))
    broken = [item["file"] for item in shipped if item["state"] == "damaged"]
    if broken:
        more = f" and {len(broken) - 1} more" if len(broken) > 1 else ""
        raise UserError(f"shipped file {broken[0]}{more} damaged (its sha256 is not the one "
                        f"{DEFAULT_MODEL_DIR}/SHA256SUMS lists): reinstall e2e_linker")
    damaged = [item["file"] for item in checked if item["state"] == "damaged"]
    if damaged:
        more = f" and {len(damaged) - 1} more" if len(damaged) > 1 else ""
        raise UserError(f"{len(damaged)} damaged KB cache file{'s' if len(damaged) > 1 else ''} "
                        f"in {root} ({damaged[0]}{more}): the next run that needs "
                        f"{'them' if len(damaged) > 1 else 'it'} discards and re-encodes "
                        f"what is damaged, or delete {'them' if len(damaged) > 1 else 'it'} "
                        "now")


def _cache_root(cache_dir: str | None) -> Path:
    """The cache folder ``--cache-dir`` or the environment names; a file there is an error,
    not an empty cache (issue 47)."""
    from e2e_linker.errors import UserError
    from e2e_linker.kb_search.cache import default_cache_dir

    root = Path(cache_dir) if cache_dir else default_cache_dir()
    if root.exists() and not root.is_dir():
        where = "--cache-dir" if cache_dir else "the cache folder (E2E_LINKER_CACHE)"
        raise UserError(f"{where} {root} is a file, not a folder; name the KB cache folder")
    return root


def unread_folders(root: Path) -> list[dict]:
    """The folders of the cache at ``root`` that neither this version of e2e_linker nor a
    later one reads: vector stores of the padded batches (``padded`` in
    :func:`~e2e_linker.kb_search.cache_report.describe_cache`) and compiled KBs of an earlier
    format (``earlier_format`` in :func:`~e2e_linker.compiled_kb.store.list_compiled`). Each:
    ``path``, ``lock`` (the folder its writers lock), ``bytes``, ``what``.

    Why only these: every other folder may be read again — a store of another model's
    encoder, a compiled KB of a spec not used lately, the folders of a later version run from
    the same cache — and re-making one costs minutes to hours (the whole-KB encode:
    docs/results.md, "Start-up and first run"); an upgrade, in contrast, leaves its
    predecessor's folders behind for good."""
    from e2e_linker.compiled_kb.store import compiled_root, list_compiled
    from e2e_linker.kb_search.cache_report import describe_cache

    out = []
    for entry in describe_cache(root) if root.is_dir() else []:
        if entry["padded"]:
            folder = root / entry["store"] / entry["folder"]
            out.append({"path": folder, "lock": folder, "bytes": entry["bytes"],
                        "what": "vectors of padded batches (an earlier version's)"})
    for item in list_compiled(root):
        if item["earlier_format"]:
            out.append({"path": Path(item["path"]), "lock": compiled_root(root),
                        "bytes": item["bytes"],
                        "what": f"compiled KB {item['spec'] or '(not recorded)'} of an "
                                "earlier format"})
    return out


@command.command("prune")
@click.option("--cache-dir", default=None, help="Cache folder (default: $E2E_LINKER_CACHE).")
@click.option("--dry-run", is_flag=True, help="List what would be deleted; delete nothing.")
def prune(cache_dir: str | None, dry_run: bool) -> None:
    """Delete what no version reads any more from the KB cache: vector stores and compiled KBs
    that an earlier version wrote (`linker kb info` marks them). Everything else stays."""
    from e2e_linker.kb_search.cache_folder import remove_folder

    root = _cache_root(cache_dir)
    found = unread_folders(root)
    for item in found:
        if not dry_run:
            remove_folder(item["path"], item["lock"], "writing", progress=True)
        click.echo(f"{'would delete' if dry_run else 'deleted'} {item['path']}: "
                   f"{item['what']}, {item['bytes'] / 2**20:,.1f} MiB")
    total = sum(item["bytes"] for item in found) / 2**20
    click.echo(f"{root}: nothing an earlier version left to delete" if not found else
               f"{len(found)} folder{'s' if len(found) > 1 else ''}, {total:,.1f} MiB "
               + ("would be freed (run without --dry-run to delete)" if dry_run else "freed"))


def _rows(item: dict, unit: str) -> str:
    """How much of a list is there: all its rows, a fill ratio, or damage."""
    if item["state"] == "partial":
        return (f"{item['encoded']:,} of {item['rows']:,} {unit} encoded "
                f"({100 * item['filled']:.1f} %; the others when a search shortlists them)")
    if item["state"] == "damaged":
        return "damaged (`linker kb info --verify` says how; the next run replaces it)"
    return f"{item['rows']:,} {unit}"


def _echo_entry(entry: dict) -> None:
    """One encoder's folder, its KB matrices and text lists, each listed once."""
    who = entry.get("encoder", {})
    click.echo(f"- {entry['store']}/{entry['folder']}: "
               f"{entry['bytes'] / 2**20:,.1f} MiB"
               + ("" if entry["in_use"] else
                  " (vectors of padded batches, no longer read: `linker kb prune` deletes it)"
                  if entry["padded"] else " (another version's encode scheme: not read by this "
                  "one)")
               + (f", {entry['names']:,} names" if "names" in entry else "")
               + (f", encoder {who.get('model') or '?'} ({who.get('pooling')}, "
                  f"{who.get('max_length')} tokens)" if who else ""))
    for kb in entry["kbs"]:
        click.echo(f"    KB {kb['kb'] or '(not recorded)'}: {_rows(kb, 'names')}, "
                   f"index {', '.join(kb['indexes'])}"
                   + (f", model {kb['model']}" if kb["model"] else
                      f", packed index {kb['packed_index']}" if kb.get("packed_index") else ""))
    for item in entry["lists"]:
        click.echo(f"    text list {item['file']}: {_rows(item, 'rows')}"
                   + (f" (KB {item['kb']})" if item.get("kb") else ""))


@command.command("check")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("--model", "model_dir", default=None, type=click.Path(exists=True, file_okay=False),
              help="Model whose types the KB's types are compared with (default: embedded; "
                   "only its linker_config.json is read).")
def check(file: str, model_dir: str | None) -> None:
    """Read FILE as `--kb tsv:FILE` would and say what it holds.

    FILE is ID<TAB>name<TAB>synonyms (|-joined, optional)<TAB>type (optional); a header
    row, blank lines and #-comments are skipped. Prints the concepts, names and synonyms,
    concepts per type, repeated IDs (merged into one concept), namespaced and bare IDs and
    the first rows with problems; a format error is one line and exit code 2.
    """
    from data_tools.kb import normalize_id
    from data_tools.kb_loaders import read_tsv_rows, tsv_kb

    rows = list(read_tsv_rows(file))
    kb = tsv_kb(rows, file)
    model_types = _model_types(model_dir)
    problems: list[tuple[int, str]] = []
    lines: dict[str, list[int]] = {}
    named: dict[str, tuple[str, int]] = {}
    foreign: dict[str, int] = {}  # a type the model does not tag → its first line
    for row in rows:
        cid = normalize_id(row.id)
        lines.setdefault(cid, []).append(row.line)
        if any(c.isspace() for c in cid):
            problems.append((row.line, f"ID {cid!r} holds a space: outputs carry it as is"))
        for name in (row.name, *row.synonyms):
            owner = named.setdefault(name.lower(), (cid, row.line))
            if owner[0] != cid:
                problems.append((row.line, f"name {name!r} also names {owner[0]} "
                                           f"(line {owner[1]})"))
        for name in row.synonyms:
            if name in model_types:
                problems.append((row.line, f"synonym {name!r} is a type: the type is the "
                                           "fourth cell (ID<TAB>name<TAB><TAB>type)"))
        for type_ in row.type.split("|"):
            if type_ and type_ not in model_types:
                foreign.setdefault(type_, row.line)
    click.echo(f"{file}: {len(rows):,} rows, {len(kb):,} concepts, {kb.num_names:,} names "
               f"({len(kb):,} preferred + {kb.num_names - len(kb):,} synonyms)")
    types = Counter(concept.type for concept in kb)
    click.echo("types: " + ", ".join(f"{t or '(none)'} {n:,}" for t, n in types.most_common()))
    _echo_ids(list(kb.concepts))
    repeated = {cid: at for cid, at in lines.items() if len(at) > 1}
    if repeated:
        shown = "; ".join(f"{cid} (lines {', '.join(map(str, at))})"
                          for cid, at in list(repeated.items())[:3])
        click.echo(f"repeated IDs: {len(repeated):,}, each merged into one concept with the "
                   f"names of all its rows: {shown}" + ("; ..." if len(repeated) > 3 else ""))
    else:
        click.echo("repeated IDs: none")
    if foreign:
        click.echo(f"warning: types the model does not tag ({', '.join(model_types)}): "
                   + ", ".join(f"{t} (first on line {line})" for t, line in foreign.items())
                   + "; a mention prefers concepts of its own type, so a concept of none of "
                     "the model's types is chosen only when none of the mention's type matches")
    if types.get(""):
        untyped = types[""]
        click.echo(f"note: {untyped:,} concept{'s' if untyped > 1 else ''} without a type: "
                   "chosen only when no concept of the mention's type matches (joined to a "
                   "preset such as medic, give each a type)")
    if problems:
        click.echo(f"rows with problems: {len(problems):,}"
                   + (f" (the first {CHECK_SHOWN})" if len(problems) > CHECK_SHOWN else ""))
        for line, what in sorted(problems)[:CHECK_SHOWN]:
            click.echo(f"  line {line}: {what}")
    else:
        click.echo("rows with problems: none")


def _model_types(model_dir: str | None) -> list[str]:
    """The types a model tags, from its ``linker_config.json`` alone (no weights loaded)."""
    from e2e_linker.collective.model import LinkerConfig
    from e2e_linker.collective.model_dir import CONFIG_FILE, read_json_object
    from e2e_linker.defaults import DEFAULT_MODEL_DIR
    from e2e_linker.errors import UserError

    path = Path(model_dir or DEFAULT_MODEL_DIR) / CONFIG_FILE
    if not path.is_file():
        raise UserError(f"{path.parent}: not a linker model directory (no {CONFIG_FILE})")
    return LinkerConfig.from_dict(read_json_object(path), path).types


def _echo_ids(ids: list[str]) -> None:
    """How the KB's IDs are written: per namespace, and bare, with an example of each."""
    from data_tools.formats.namespaces import PREFIXED

    spaces: Counter[str] = Counter()
    example: dict[str, str] = {}
    for cid in ids:
        space = cid.split(":", 1)[0] + ":" if PREFIXED.match(cid) else "bare"
        spaces[space] += 1
        example.setdefault(space, cid)
    click.echo("IDs: " + ", ".join(f"{space} {n:,} (e.g. {example[space]})"
                                   for space, n in spaces.most_common())
               + " (a MESH: prefix is dropped: the KB keys MeSH IDs bare)")
