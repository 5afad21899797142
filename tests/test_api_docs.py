"""The API docs pages (Swagger UI, Redoc): permitted like the schema, and offline: every asset
they name is one of our static files, nothing comes from another origin."""
import re

import pytest
from django.contrib.staticfiles import finders
from django.test import Client

pytestmark = pytest.mark.django_db

PAGES = ("/api/docs/", "/api/redoc/")
ATTRS = re.compile(r"""\b(?:src|href|spec-url)=["']([^"']*)["']""")


def _assets(html: str) -> list[str]:
    return ATTRS.findall(html)


@pytest.mark.parametrize("path", PAGES)
def test_the_page_loads_everything_from_our_static(analyst_client, path):
    response = analyst_client.get(path)
    assert response.status_code == 200
    html = response.content.decode()
    assert not re.search(r"https?:|//[a-z]", html), "a URL of another origin"
    assets = _assets(html)
    assert any(a.endswith(".js") for a in assets)
    for url in assets:
        if url.startswith("/static/"):
            assert finders.find(url.removeprefix("/static/")), f"missing static file {url}"
        else:
            assert url.startswith(("/api/schema/", "/api/docs/?script")), url
    policy = response.headers["Content-Security-Policy"]
    assert "script-src 'self';" in policy and "http" not in policy


def test_the_swagger_start_up_script_is_served_apart(analyst_client):
    response = analyst_client.get("/api/docs/?script=")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/javascript")
    script = response.content.decode()
    assert "/api/schema/" in script and '"validatorUrl": null' in script


@pytest.mark.parametrize("path", PAGES)
def test_the_docs_are_permitted_like_the_schema(path, alice, analyst, admin):
    for user in (None, alice, analyst, admin):
        client = Client()
        if user is not None:
            client.force_login(user)
        assert client.get(path).status_code == client.get("/api/schema/").status_code, user
    assert Client().get(path).status_code == 401
