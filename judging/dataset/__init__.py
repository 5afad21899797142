"""The study as a dataset: Parquet tables with a documented schema, a dataset card, and the
way back in (``export.dataset_export``, ``imports.dataset_import``)."""
