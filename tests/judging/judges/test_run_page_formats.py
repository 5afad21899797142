"""The judge-run pages write money as currency and say what the parse counts mean: a run that
cost $0.272216 reads "$0.27" (the exact amount in the tooltip; the API keeps every digit), and
"how the verdicts were read" replaces "Parse paths: strict 4"."""
from decimal import Decimal

import pytest
from django.urls import reverse

from judging.judges.models import JudgeRun
from tests.judging.judges.test_pages_and_api import _done_run

pytestmark = pytest.mark.django_db


def test_run_pages_show_currency_and_plain_words(server, analyst_client):
    run = _done_run(server)
    JudgeRun.objects.filter(pk=run.pk).update(cost=Decimal("0.272216"),
                                              estimated_cost=Decimal("1.5"),
                                              budget=Decimal("10"))
    html = analyst_client.get(reverse("judging:judges:run_detail", args=[run.uuid])
                              ).content.decode()
    assert '<strong title="exactly $0.272216">$0.27</strong>' in html
    assert "$1.50" in html and "budget $10.00" in html
    assert "0.272216<" not in html and "Parse paths" not in html
    assert "4 read directly (the answer was in the expected format)" in html
    assert " UTC" in html  # the moment says its zone
    listing = analyst_client.get(reverse("judging:judges:run_list")).content.decode()
    assert ">$0.27</td>" in listing and ">$10.00</td>" in listing
    # downloads / the API keep full precision
    assert analyst_client.get(f"/api/judges/runs/{run.uuid}/progress/").json()["cost"] == (
        "0.272216")
