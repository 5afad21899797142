"""The MTurk launch page says Sandbox or Production in large type, with the endpoint, before
anyone presses Launch; Production looks different from the Sandbox."""
from decimal import Decimal

import pytest
from django.contrib.staticfiles import finders
from django.urls import reverse

from annotation.providers.mturk.client import PRODUCTION_ENDPOINT, SANDBOX_ENDPOINT
from tests.factories import make_batch

pytestmark = pytest.mark.django_db


def _banner(html: str) -> str:
    start = html.index('id="mturk-env"')
    return html[html.rindex("<div", 0, start):html.index("</div>", start)]


def _page(client, provider="mturk"):
    batch = make_batch(1, n=1, activate=False, provider=provider, budget=Decimal("5"))
    response = client.get(reverse("admin:annotation_marketplacebatch_launch", args=[batch.pk]))
    assert response.status_code == 200
    return response.content.decode()


def test_sandbox_is_named_with_its_endpoint(admin_client_, settings):
    settings.MTURK_PRODUCTION = False
    banner = _banner(_page(admin_client_))
    assert "mturk-env sandbox" in banner and "SANDBOX" in banner
    assert SANDBOX_ENDPOINT in banner and "PRODUCTION" not in banner


def test_production_is_named_in_its_own_colour_with_its_endpoint(admin_client_, settings):
    settings.MTURK_PRODUCTION = True
    banner = _banner(_page(admin_client_))
    assert "mturk-env production" in banner and "PRODUCTION" in banner
    assert PRODUCTION_ENDPOINT in banner and "SANDBOX" not in banner


def test_a_configured_endpoint_is_the_one_shown(admin_client_, settings):
    settings.MTURK_ENDPOINT_URL = "https://mturk.test.invalid"
    assert "https://mturk.test.invalid" in _banner(_page(admin_client_))


def test_the_banner_style_is_a_served_file_with_distinct_colours(admin_client_):
    """The CSP forbids inline styles, so the large type and colours come from this file."""
    html = _page(admin_client_)
    assert "annotation/admin/providers.css" in html
    css = open(finders.find("annotation/admin/providers.css")).read()
    production = css[css.index(".mturk-env.production"):].split("}")[0]
    sandbox = css[css.index(".mturk-env.sandbox"):].split("}")[0]
    assert "background: #b71c1c" in production and "background: #b71c1c" not in sandbox
    assert "font-size: 2.2rem" in css[css.index(".mturk-env {"):].split("}")[0]


def test_prolific_launch_shows_no_mturk_banner(admin_client_):
    assert 'id="mturk-env"' not in _page(admin_client_, provider="prolific")
