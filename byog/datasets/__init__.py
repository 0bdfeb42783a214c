"""byog's own copy of the offline eval data (GSM8K, AIME 2025, MT-Bench), each folder with its
upstream licence and PROVENANCE.md. ``byog.core.settings.resolve_data_dir`` finds it."""
