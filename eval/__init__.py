"""Benchmarks and paper-table reproductions, run from a checkout (`python -m eval.<name>`)."""
