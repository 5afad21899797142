"""Crowd marketplaces behind one interface: local accounts (default), Mechanical Turk, Prolific.

``base`` holds the interface and registry, ``services`` the one-function-per-operation entry
points every caller (admin, commands, Celery) goes through. Keep this module import-free: the
models package imports ``annotation.providers.models`` at start-up.
"""
