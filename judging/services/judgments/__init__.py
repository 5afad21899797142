"""Judgments written, read from files and written to files, one module each:

- ``record``: the one writer of ``Judgment`` rows (crowd votes, automatic judges, imports);
- ``formats``: the file formats' columns, and rows parsed, checked and normalised;
- ``imports``: a file matched against the database and stored, all or nothing, idempotent;
- ``exports``: judgments written back out in those formats;
- ``rejection``: a rejected assignment's votes taken out of every count, and put back.

Import from the module that holds a name (this package re-exports nothing, so writing a vote
does not load the file formats).
"""
