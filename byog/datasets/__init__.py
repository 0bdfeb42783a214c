"""byog's own copy of the offline data (GSM8K, AIME 2025, MT-Bench, the arithmetic task's rows, a
sample of Mooncake's conversation trace), each folder with its PROVENANCE.md (and its upstream licence). ``byog.core.settings.resolve_data_dir`` finds it."""
