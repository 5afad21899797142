"""Automatic judges: LLM/VLM-as-a-judge configurations, runs and verdicts."""
