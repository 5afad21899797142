"""Crowd-work engine (workers, batches, tasks, assignments, qualifications) and benchmark content."""
