"""`python -m e2e_linker ...` (and `accelerate launch -m e2e_linker ...`) runs the CLI."""

from e2e_linker.cli import main

if __name__ == "__main__":
    main()
