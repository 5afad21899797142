"""Importers: parsed benchmark files (``annotation.content.formats``) written to the database
atomically, and images stored safely. The management commands and the admin upload call these."""
