"""byog.analysis: pure functions of raw records (metrics, validity, summaries, statistics)."""
