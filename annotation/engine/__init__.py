"""The crowd-work engine: workers, batches, tasks, assignments, claims, submissions, leases,
qualifications and the HIT-type registry. Knows nothing of benchmarks or marketplaces."""
