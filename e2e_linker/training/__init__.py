"""Training loops: the collective model (collective.py) and its configuration and losses."""
