"""Benchmark content in and out: the source datasets' file formats, importers and exports.
The content models themselves live in ``annotation.models.content``."""
