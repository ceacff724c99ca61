"""The collective dual encoder (Bhowmik et al. 2021): one BERT pass per chunk, every short span scored for mention-ness, kept spans pooled and linked against cached entity vectors."""
