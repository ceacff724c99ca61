"""The text-only mention normalizer (Xu & Bethard 2021): triplet-trained encoder plus sieves, for mentions that already exist."""
