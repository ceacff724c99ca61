"""e2e_linker: end-to-end biomedical entity linking."""
