"""Importers: parsed benchmark files (``annotation.dataset_formats``) written to the database
atomically, and images stored safely. The management commands and the admin upload call these."""
