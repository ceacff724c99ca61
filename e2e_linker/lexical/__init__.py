"""Text-level steps, no vectors: abbreviations, name folds and salt-free forms, the exact-name and compact-key sieves and the sieve stack that both annotate and normalize run."""
