"""Judge run pages (filled by the automatic-judges work)."""
urlpatterns: list = []
