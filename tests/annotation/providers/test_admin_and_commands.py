"""Admin launch page (estimate + confirmation), admin actions, and the thin commands."""
from decimal import Decimal

import pytest
from botocore.stub import ANY
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotation.models import Bonus, ProviderHit
from tests.factories import make_batch

from .test_mturk import expect_hit, expect_hit_type, hit_id, remote, work

pytestmark = pytest.mark.django_db(transaction=True)


def test_launch_page_shows_the_estimate_and_needs_confirmation(mturk, admin_client_):
    batch = make_batch(2, n=3, activate=False, provider="mturk", budget=Decimal("5"),
                       description="Pick the better answer")
    url = reverse("admin:annotation_marketplacebatch_launch", args=[batch.pk])
    page = admin_client_.get(url)
    html = page.content.decode()
    assert page.status_code == 200 and "$0.72" in html  # 6 × (0.10 + 0.02)
    refused = admin_client_.post(url, {})
    assert refused.status_code == 200 and not ProviderHit.objects.exists()
    expect_hit_type(mturk, batch)
    for i, task in enumerate(batch.tasks.order_by("position"), start=1):
        expect_hit(mturk, task, i)
    done = admin_client_.post(url, {"confirm": "on"})
    assert done.status_code == 302 and ProviderHit.objects.filter(status="live").count() == 2
    listing = admin_client_.get(reverse("admin:annotation_marketplacebatch_changelist"))
    assert "hits: live 2" in listing.content.decode()


def test_launch_page_requires_the_production_box_in_production(mturk, admin_client_, settings):
    settings.MTURK_PRODUCTION = True
    batch = make_batch(1, n=1, activate=False, provider="mturk", budget=Decimal("5"))
    url = reverse("admin:annotation_marketplacebatch_launch", args=[batch.pk])
    assert "PRODUCTION" in admin_client_.get(url).content.decode()
    admin_client_.post(url, {"confirm": "on"})  # no production box: nothing is sent
    assert not ProviderHit.objects.exists()


def test_sync_now_action_and_commands(mturk, admin_client_, tmp_path, capsys):
    batch = make_batch(1, n=2, activate=False, provider="mturk", budget=Decimal("5"),
                       description="Pick the better answer")
    expect_hit_type(mturk, batch)
    expect_hit(mturk, batch.tasks.get(), 1, n=2)
    call_command("provider_launch", str(batch.uuid))
    out = capsys.readouterr().out
    assert "= $0.24" in out and "Published 1 new" in out
    batch.refresh_from_db()
    a = work(batch.tasks.get(), "W1", "ASG1")
    mturk.add_response("list_assignments_for_hit", {"Assignments": [remote("ASG1", "W1",
                                                                           hit_id(1))]})
    admin_client_.post(reverse("admin:annotation_marketplacebatch_changelist"),
                       {"action": "sync_now", "_selected_action": [batch.pk]})
    assert a.__class__.objects.get(pk=a.pk).status == "submitted"  # manual policy by default
    # Bonuses from a CSV: a bad row stops everything before anything is paid.
    bad = tmp_path / "bad.csv"
    bad.write_text("assignment,amount,reason\nASG1,0.20,Good\nNOPE,0.20,Good\n")
    with pytest.raises(CommandError, match="Row 2"):
        call_command("provider_pay", str(batch.uuid), str(bad))
    assert not Bonus.objects.exists()
    good = tmp_path / "good.csv"
    good.write_text(f"assignment,amount,reason\n{a.uuid},0.20,Good\n")
    mturk.add_response("send_bonus", {}, {"WorkerId": "W1", "BonusAmount": "0.20",
                                          "AssignmentId": "ASG1", "Reason": "Good",
                                          "UniqueRequestToken": ANY})
    call_command("provider_pay", str(batch.uuid), str(good))
    call_command("provider_pay", str(batch.uuid), str(good))  # re-run: nothing sent again
    assert Bonus.objects.get().status == "paid"
    mturk.add_response("list_assignments_for_hit", {"Assignments": []})
    call_command("provider_sync", str(batch.uuid))
    assert "seen 0" in capsys.readouterr().out
