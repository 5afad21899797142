"""Models' responses, comparisons, human and automatic judgments, ratings and leaderboards."""
