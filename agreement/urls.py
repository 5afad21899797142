"""Analyst report pages (filled by the agreement work)."""
app_name = "agreement"
urlpatterns: list = []
