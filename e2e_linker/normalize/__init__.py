"""Text-only mention normalizer (Xu & Bethard 2021): triplet-trained encoder + sieve search.

Modules: :mod:`.preprocess` (case/punctuation folding, composite splitting),
:mod:`.abbreviation` (in-document Schwartz–Hearst expansion), :mod:`.loss` (batch-hard
soft-margin triplet loss), :mod:`.batching` (P×K batches), :mod:`.search` (the 14 search modes
and the vector cache) and :mod:`.normalizer` (model directories, ``normalize_documents``).
"""
