"""Running over a corpus: resumable shard engine, multi-process runs, memory-aware batch allocation, model guard."""
