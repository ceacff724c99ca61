"""Views of annotated documents for people: the self-contained HTML page of ``linker view``."""
