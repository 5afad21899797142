"""The analyst's home (leaderboards with judgment counts, reports, judge runs) and the admin's
study dashboard (batches with progress and money, drafts apart, judge runs, reports)."""
from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils import timezone

from agreement.models import Report
from annotation.models import Assignment
from judging.judges.models import Judge, JudgeRun
from tests.factories import make_batch, make_workers, publish_on_mturk
from tests.support.homes import submit

pytestmark = pytest.mark.django_db
ANALYST_HOME, DASHBOARD = reverse("homes:analyst"), reverse("homes:dashboard")


def _run(**fields):
    judge = Judge.objects.create(name="gpt-judge", kind="pairwise", base_url="http://x/v1",
                                 model_name="m")
    return JudgeRun.objects.create(judge=judge, scope="comparisons", created_at=timezone.now(),
                                   **fields)


def test_analyst_home_lists_sources_with_counts_reports_and_runs(analyst_client, study):
    Report.objects.create(title="Pilot <b>study</b>", created_at=timezone.now(),
                          status=Report.Status.FAILED, error="ValueError: no votes")
    _run(units_total=10, units_done=4, status=JudgeRun.Status.RUNNING)
    html = analyst_client.get(ANALYST_HOME).content.decode()
    # The constructed study: 20 human votes and 8 human grades; J1 4 votes + 4 grades; J2 4.
    assert '?judge=human">human</a>' in html
    assert "<td class=\"num\">20</td><td class=\"num\">8</td>" in html
    assert '?judge=J1">J1</a>' in html and '?judge=J2">J2</a>' in html
    assert html.index("?judge=human") < html.index("?judge=J1")  # humans first
    assert "Pilot &lt;b&gt;study&lt;/b&gt;" in html and "ValueError: no votes" in html
    assert "gpt-judge@1" in html and "4/10" in html


def test_analyst_home_links_the_review_and_lists_no_rulings_as_a_source(analyst_client):
    from judging.models import Comparison, Judgment
    from judging.services.adjudication import item_adjudicate
    from judging.services.judgments.record import judgment_record
    from tests.judging import builders

    inst = builders.instance(urls=[])
    ms = builders.models("h-a", "h-b")
    comparison = Comparison.objects.create(instance=inst,
                                           response_a=builders.respond(inst, ms["h-a"]),
                                           response_b=builders.respond(inst, ms["h-b"]))
    judgment_record(source=Judgment.HUMAN, annotator="w1", comparison=comparison, choice="A")
    item_adjudicate(comparison=comparison, turn="", choice="A", analyst="ann")
    html = analyst_client.get(ANALYST_HOME).content.decode()
    assert f'href="{reverse("review:list")}" id="review-link"' in html
    sources = html[html.index('id="leaderboards"'):html.index('id="reports"')]
    assert "?judge=human" in sources and "adjudication" not in sources


def test_dashboard_shows_progress_cost_with_fees_and_drafts_apart(admin_client_):
    local = make_batch(2, n=2, reward=Decimal("0.10"), budget=Decimal("5.00"))
    mturk = make_batch(2, n=2, reward=Decimal("0.10"), budget=Decimal("1.00"))
    publish_on_mturk(mturk)
    draft = make_batch(3, activate=False)
    for batch, provider in ((local, "local"), (mturk, "mturk")):
        for worker in make_workers(2, provider=provider):  # each marketplace its own workers
            submit(batch, worker)
    from annotation.engine.services.claims import task_claim_next

    task_claim_next(batch=local, worker=make_workers(1)[0])
    html = admin_client_.get(DASHBOARD).content.decode()
    local_row = html[html.index(f'id="batch-{local.uuid}"'):]
    local_row = local_row[:local_row.index("</tr>")]
    assert '<td class="num done">2</td><td class="num leased">1</td>' in local_row
    assert '<td class="num remaining">1</td>' in local_row
    assert '<span class="spent">$0.20</span>' in local_row and "$5.00" in local_row
    mturk_row = html[html.index(f'id="batch-{mturk.uuid}"'):]
    mturk_row = mturk_row[:mturk_row.index("</tr>")]
    # MTurk: 20 % fee on each $0.10 reward (at least a cent): 2 × $0.12.
    assert '<span class="spent">$0.24</span>' in mturk_row and "Mechanical Turk" in mturk_row
    assert "full batch: $0.48, fees included" in mturk_row
    drafts = html[html.index('id="drafts"'):]
    assert draft.title in drafts and "3 tasks" in drafts
    assert f'id="batch-{draft.uuid}"' not in html
    assert reverse("console:upload") in html  # the product's upload wizard, not the admin's


def test_dashboard_counts_paid_bonuses_as_spent(admin_client_):
    from annotation.models import Bonus

    batch = make_batch(1, n=1, reward=Decimal("1.00"), budget=Decimal("10.00"))
    done = submit(batch, make_workers(1)[0], status=Assignment.Status.APPROVED)
    Bonus.objects.create(batch=batch, assignment=done, worker=done.worker, provider="local",
                         amount=Decimal("0.50"), reason="r", key="k", token="t",
                         status=Bonus.Status.PAID, created_at=timezone.now())
    html = admin_client_.get(DASHBOARD).content.decode()
    assert '<span class="spent">$1.50</span>' in html


def test_dashboard_query_count_is_flat(admin_client_, django_assert_max_num_queries):
    workers = make_workers(2)
    for _ in range(6):
        batch = make_batch(2, n=2)
        submit(batch, workers[0])
    make_batch(1, activate=False)
    _run()
    admin_client_.get(DASHBOARD)
    with django_assert_max_num_queries(10):
        admin_client_.get(DASHBOARD)


@pytest.mark.parametrize("page,allowed", [(ANALYST_HOME, {"analyst", "admin"}),
                                          (DASHBOARD, {"admin"})])
def test_homes_refuse_other_roles(page, allowed, alice_client, analyst_client, admin_client_):
    clients = {"annotator": alice_client, "analyst": analyst_client, "admin": admin_client_}
    for role, client in clients.items():
        assert client.get(page).status_code == (200 if role in allowed else 403), role
