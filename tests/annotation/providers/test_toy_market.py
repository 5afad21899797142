"""A new marketplace is one subpackage: the toy one in ``toy_market/`` (nothing outside
``tests/`` names it) registers through the registry, its arrival page is mounted by the one
loop in ``annotation/urls.py``, and a worker goes from arrival to payment through the generic
services: launch, arrive, claim, submit on our pages, sync, approve, bonus, cost."""
import importlib
from decimal import Decimal
from urllib.parse import parse_qs, urlsplit

import pytest
from django.conf import settings as django_settings
from django.urls import NoReverseMatch, clear_url_caches, reverse

from annotation.core import marketplaces
from annotation.engine.selectors import batch_costs
from annotation.models import Assignment, ProviderHit, Worker
from annotation.providers import services
from tests.factories import make_batch

pytestmark = pytest.mark.django_db(transaction=True)  # marketplace calls run outside transactions


def _remount():
    """The URL loop runs when ``annotation.urls`` is imported: re-run it, and rebuild the root
    URLconf that holds its resolver."""
    importlib.reload(importlib.import_module("annotation.urls"))
    importlib.reload(importlib.import_module(django_settings.ROOT_URLCONF))
    clear_url_caches()


@pytest.fixture
def toy(settings):
    """The toy marketplace registered and its URLs mounted, for this test only."""
    settings.PUBLIC_BASE_URL = "https://eval.example.org"
    provider = importlib.import_module("tests.annotation.providers.toy_market.provider")
    marketplaces.register(provider.ToyProvider)  # again, when an earlier test took it out
    _remount()
    from tests.annotation.providers.toy_market.market import MARKET
    MARKET.clear()
    yield MARKET
    marketplaces.unregister("toy")
    _remount()


def _arrive(client, market, unit, worker, seat):
    page = urlsplit(market.pages[unit])
    return client.get(page.path, {"worker": worker, "seat": seat, "unit": unit})


def test_a_toy_marketplace_goes_from_arrival_to_payment(toy, client):
    batch = make_batch(2, n=1, activate=False, provider="toy", budget=Decimal("10.00"),
                       reward=Decimal("0.50"))
    report = services.batch_launch(batch, actor="test")
    assert (report.total, report.created) == (2, 2)
    first = batch.tasks.order_by("position").first()
    unit = ProviderHit.objects.get(task=first).external_id
    assert toy.pages[unit] == f"https://eval.example.org/ext/toy/task/{first.uuid}/"

    arrival = _arrive(client, toy, unit, "W1", "SEAT1")
    assert arrival.status_code == 302
    page_url = arrival["Location"]
    token = parse_qs(urlsplit(page_url).query)["t"][0]
    done = client.post(page_url.split("?")[0], {"choice": "A", "t": token})
    assert done.status_code == 200
    html = done.content.decode()
    action = html.split('action="', 1)[1].split('"', 1)[0]
    assert action == "/ext/toy/submitted/mturk/externalSubmit"
    assert client.post(action, {"assignmentId": "SEAT1"}).status_code == 200
    assignment = Assignment.objects.get(provider_assignment_id="SEAT1")
    assert (assignment.worker.provider, assignment.worker.external_id) == ("toy", "W1")
    assert assignment.task_id == first.pk and assignment.status == Assignment.Status.SUBMITTED

    sync = services.batch_sync(batch, actor="test")
    assert (sync.seen, sync.matched, sync.flagged) == (1, 1, 0)
    assert services.assignment_approve(assignment, actor="ada") is True
    assert toy.approved == ["SEAT1"]
    bonus = services.worker_bonus(assignment, amount="0.20", reason="Careful work", actor="ada")
    assert toy.bonuses == [("W1", "SEAT1", Decimal("0.20"))] and bonus.status == "paid"
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.APPROVED
    # reward 0.50 + 10 % and bonus 0.20 + 10 %, at the toy's own fee schedule
    assert batch_costs(batch).spent == Decimal("0.77")


def test_an_arrival_for_a_unit_it_did_not_publish_writes_nothing(toy, client):
    batch = make_batch(1, n=1, activate=False, provider="toy", budget=Decimal("10.00"))
    services.batch_launch(batch)
    (unit,) = toy.pages
    toy.pages["FORGED"] = toy.pages[unit]
    refused = _arrive(client, toy, "FORGED", "W2", "SEAT2")
    assert refused.status_code == 403
    assert not Worker.objects.filter(provider="toy").exists()
    assert not Assignment.objects.filter(batch=batch).exclude(worker=None).exists()


def test_the_toy_is_mounted_only_while_registered(toy):
    assert reverse("annotation:toy_task", args=["8a6e0804-2bd1-4a5d-9f8a-0a6b0b6f0e1a"]) == (
        "/ext/toy/task/8a6e0804-2bd1-4a5d-9f8a-0a6b0b6f0e1a/")
    assert marketplaces.get_provider("toy").fees().reward_fee(Decimal("1.00"), 1) == Decimal(
        "0.10")


def test_without_registering_no_toy_page_is_mounted():
    """Production never registers the toy: its pages exist only through the registry."""
    assert "toy" not in [p.name for p in marketplaces.registered()]
    with pytest.raises(NoReverseMatch):
        reverse("annotation:toy_task", args=["8a6e0804-2bd1-4a5d-9f8a-0a6b0b6f0e1a"])
