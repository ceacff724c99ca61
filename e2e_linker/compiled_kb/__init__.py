"""The compiled KB: what annotate and normalize derive from a KB spec's vocabulary files, built
once into the cache folder as flat arrays and memory-mapped by every later start.

* :mod:`~e2e_linker.compiled_kb.kb_view` — the arrays of one KB and :class:`CompiledKB`, the
  KB interface (``get``, ``resolve``, iteration, ``names``...) and the sieves' dictionaries
  served from them;
* :mod:`~e2e_linker.compiled_kb.vocab_digests` — which files a spec reads and their content
  digests: the compiled KB's key;
* :mod:`~e2e_linker.compiled_kb.store` — the cache folder: build (atomic, sealed), open
  (checked; a damaged file is discarded and the KB rebuilt), list.
"""
