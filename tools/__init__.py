"""Scripts around the package that are neither the package nor an evaluation (docs/scaling.md)."""
