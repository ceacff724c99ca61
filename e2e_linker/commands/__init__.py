"""One click command per module; e2e_linker.cli gathers them into the ``linker`` group."""
