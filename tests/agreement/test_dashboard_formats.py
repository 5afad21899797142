"""The dashboard writes one format: rewards and spend as currency, HIT types by their titles,
"3 workers per task" rather than "N = 3", judge-run costs rounded to cents with their zone-named
dates."""
from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils import timezone

from annotation.engine.hit_types import get_hit_type
from judging.judges.models import Judge, JudgeRun
from tests.factories import make_batch

pytestmark = pytest.mark.django_db


def test_dashboard_reads_in_one_format(admin_client_):
    batch = make_batch(2, n=3, reward=Decimal("0.05"), budget=Decimal("5"))
    judge = Judge.objects.create(name="gpt-judge", version="1", model_name="m",
                                 base_url="http://127.0.0.1:9/")
    JudgeRun.objects.create(judge=judge, scope=JudgeRun.Scope.COMPARISONS,
                            cost=Decimal("0.272216"), budget=Decimal("2"),
                            created_at=timezone.now())
    html = admin_client_.get(reverse("homes:dashboard")).content.decode()
    row = html[html.index(f'id="batch-{batch.uuid}"'):]
    row = row[:row.index("</tr>")]
    assert f"{get_hit_type(batch.hit_type).title} · 3 workers per task · $0.05 per task" in row
    assert "N = 3" not in row and f">{batch.hit_type} ·" not in row
    assert '<span class="budget">$5.00</span>' in row
    assert ">$0.27</span>" in html and "0.272216<" not in html and "$2.00" in html
    assert " UTC</a>" in html
