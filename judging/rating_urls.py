"""Leaderboards and other human-evaluation pages (filled by the human-evaluation work)."""
urlpatterns: list = []
