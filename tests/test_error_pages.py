"""403, 404 and 500 pages inside the layout, as production (DEBUG off) renders them; the 500
page needs neither a request nor the database; the favicon is served."""
import pytest
from django.test import Client, RequestFactory
from django.urls import include, path, reverse
from django.views.defaults import server_error

from annotation.core.permissions import public


@public
def _boom(request):
    raise RuntimeError("a bug")


# This module doubles as the URL map of the 500 test: the project's URLs plus a failing view.
urlpatterns = [path("boom/", _boom), path("", include("config.urls"))]


@pytest.mark.django_db
def test_403_names_the_needed_role_and_links_home(alice_client, settings):
    settings.DEBUG = False
    response = alice_client.get(reverse("agreement:report_list"))
    html = response.content.decode()
    assert response.status_code == 403
    assert "This page needs the analyst role." in html
    assert 'id="own-home"' in html and f'href="{reverse("annotation:home")}"' in html
    assert 'class="topbar"' in html and "Available work" in html  # the layout, with navigation


@pytest.mark.django_db
def test_403_reason_is_escaped(client, django_user_model, settings):
    settings.DEBUG = False
    user = django_user_model.objects.create_user("<b>eve</b>", password="x")
    client.force_login(user)
    html = client.get("/").content.decode()
    assert "<b>eve</b>" not in html and "&lt;b&gt;eve&lt;/b&gt;" in html


@pytest.mark.django_db
def test_404_is_inside_the_layout(alice_client, settings):
    settings.DEBUG = False
    response = alice_client.get("/no/such/page/")
    html = response.content.decode()
    assert response.status_code == 404
    assert "There is nothing here" in html and 'class="topbar"' in html
    assert "Available work" in html  # signed-in navigation


@pytest.mark.django_db
@pytest.mark.urls(__name__)
def test_500_through_the_real_handler(settings):
    settings.DEBUG = False
    client = Client(raise_request_exception=False)
    response = client.get("/boom/")
    html = response.content.decode()
    assert response.status_code == 500
    assert "Something went wrong on our side" in html and 'class="topbar"' in html
    assert "a bug" not in html  # no internals


def test_500_renders_without_a_database():
    """No ``db`` mark: any query would fail the test (a 500 may come from a database outage)."""
    response = server_error(RequestFactory().get("/"))
    assert response.status_code == 500
    assert "Something went wrong on our side" in response.content.decode()


@pytest.mark.django_db
def test_favicon(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 301 and response.url.endswith("/static/favicon.svg")
    assert 'rel="icon"' in client.get(reverse("login")).content.decode()
