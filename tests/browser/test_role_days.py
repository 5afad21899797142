"""Each role's day in real Chromium, from the login form on (issue #15, "Done when").

- The annotator: log in → available work → a batch's tasks (keyboard and mouse) → the next
  task → "My work" with the submitted assignments and their pending earnings.
- The admin: log in → study dashboard → upload a batch from the offered sample file → activate
  it through the confirmation → the MTurk launch page says Sandbox → export the batch's results
  as CSV (rows name the annotator by username) → the worker's page → approve a submission.
- The analyst: log in → analysis home → leaderboard → generate a report (progress bar, then the
  same page becomes the report) → its table of contents → disagreement review → adjudicate.

Data comes from the services and test builders; every assertion is on what the user sees (text,
addresses, the downloaded file).
"""
import csv
import io
import threading
from datetime import timedelta
from decimal import Decimal

import pytest
from django.urls import reverse

from annotation.core.background import wait_for_jobs
from annotation.engine.services.claims import task_claim_next
from annotation.engine.services.submissions import assignment_submit
from annotation.engine.services.workers import worker_for_user
from annotation.models import Batch
from tests.agreement.study import build_study
from tests.factories import make_batch, make_workers

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DASHBOARD, ANALYSIS, AVAILABLE = "/study/dashboard/", "/study/", "/work/"


def log_in(page_for, user, *, lands_on: str):
    """A fresh browser opens "/", is sent to the login form, types the account's credentials
    (the ``tests/conftest.py`` personas' password is ``pw-<username>``) and lands on its home."""
    page = page_for(None)
    page.route("https://example.org/**", lambda route: route.abort())  # builders' image URLs
    page.goto("/")
    assert "/accounts/login/" in page.url
    page.fill("input[name=username]", user.username)
    page.fill("input[name=password]", "pw-" + user.username)
    page.click("button:has-text('Log in')")
    page.wait_for_url(f"**{lands_on}")
    return page


def submit_as(user, batch, choices):
    """``user`` answers the batch's next tasks through the claim and submit services."""
    worker = worker_for_user(user)
    for choice in choices:
        assignment = task_claim_next(batch=batch, worker=worker)
        assignment_submit(assignment=assignment, data={"choice": choice},
                          now=assignment.claimed_at + timedelta(seconds=40))


# --- the annotator ---------------------------------------------------------------------------

def test_annotators_day(page_for, alice):
    batch = make_batch(3, n=1, reward=Decimal("0.25"))
    page = log_in(page_for, alice, lands_on=AVAILABLE)
    card = page.locator(f"#batch-{batch.uuid}")
    assert batch.title in card.inner_text() and "3 tasks" in card.inner_text()

    card.locator("a.start").click()
    page.wait_for_selector("#task-position:has-text('Task 1 of 3')")
    page.wait_for_load_state("load")  # the page's keyboard script is deferred
    page.keyboard.press("2")  # keyboard: B, then Enter submits
    assert page.locator("#choice-B").is_checked()
    page.keyboard.press("Enter")
    page.wait_for_selector("#task-position:has-text('Task 2 of 3')")
    page.click("label[for=choice-A]")  # mouse: A, then the submit button
    page.click("#submit-btn")
    page.wait_for_selector("#task-position:has-text('Task 3 of 3')")
    assert page.locator("#instruction").is_visible()  # the next task, ready to answer

    page.click("nav >> text=My work")
    page.wait_for_url("**/work/mine/")
    rows = page.locator("#history tbody tr")
    statuses = sorted(rows.nth(i).locator(".status").inner_text() for i in range(rows.count()))
    assert statuses == ["in progress", "pending review", "pending review"]
    assert page.locator("#earned-pending").inner_text() == "$0.50"
    assert page.locator("#earned-approved").inner_text() == "$0.00"


# --- the admin -------------------------------------------------------------------------------

def test_admins_day(page_for, admin, alice, tmp_path):
    running = make_batch(4, n=1)  # a batch under way: 1 of 4 done by another worker
    first = task_claim_next(batch=running, worker=make_workers(1)[0])
    assignment_submit(assignment=first, data={"choice": "A"},
                      now=first.claimed_at + timedelta(seconds=30))
    page = log_in(page_for, admin, lands_on=DASHBOARD)

    # The dashboard: batches with their progress.
    row = page.locator(f"#batch-{running.uuid}")
    assert running.title in row.inner_text()
    assert row.locator(".done").inner_text() == "1" and row.locator(".remaining").inner_text() == "3"
    assert "25 %" in row.inner_text()

    # Upload from the sample file the Django admin's upload page offers for pairwise A/B (the
    # dashboard's button leads to the product's wizard: tests/browser/test_admin_batches_day.py).
    page.goto(reverse("admin:annotation_batch_upload"))
    page.select_option("#id_hit_type", "pairwise_ab")
    with page.expect_download() as download:
        page.locator("#columns-pairwise_ab a", has_text="pairwise_ab-sample.csv").click()
    sample = tmp_path / download.value.suggested_filename
    download.value.save_as(sample)
    page.fill("#id_title", "Walk upload")
    page.fill("#id_assignments_per_task", "1")
    page.fill("#id_reward", "0.20")
    page.fill("#id_budget", "5.00")
    page.set_input_files("#id_file", str(sample))
    page.click("input[value='Create batch']")
    page.wait_for_url("**/admin/annotation/batch/*/change/")
    assert "Created “Walk upload” with 2 tasks" in page.locator(".messagelist").inner_text()
    uploaded = Batch.objects.get(title="Walk upload")
    assert uploaded.status == Batch.Status.DRAFT

    # Activate: the action asks first, then opens the batch.
    page.goto(reverse("admin:annotation_batch_changelist"))
    page.check(f"input[name=_selected_action][value='{uploaded.pk}']")
    page.select_option("select[name=action]", "activate")
    page.click("button[name=index]")
    confirm = page.locator("#activate-batches")
    assert "Walk upload" in confirm.inner_text() and "$0.40" in confirm.inner_text()
    uploaded.refresh_from_db()
    assert uploaded.status == Batch.Status.DRAFT  # nothing happens before "Yes"
    page.click("input[value='Yes, activate']")
    page.wait_for_url("**/admin/annotation/batch/")
    uploaded.refresh_from_db()
    assert uploaded.status == Batch.Status.ACTIVE
    page.goto(DASHBOARD)  # now among the live batches, nothing done yet
    row = page.locator(f"#batch-{uploaded.uuid}")
    assert "Active" in row.inner_text() and row.locator(".remaining").inner_text() == "2"
    assert row.locator(".budget").inner_text() == "$5.00"

    # The launch page of a Mechanical Turk batch says Sandbox in large type (not launched).
    mturk = make_batch(1, n=1, provider="mturk", budget="5.00", activate=False)
    page.goto(reverse("admin:annotation_marketplacebatch_changelist"))
    page.locator("tr", has_text=mturk.title).locator("a:has-text('Launch…')").click()
    assert "SANDBOX" in page.locator("#mturk-env").inner_text()
    assert float(page.locator("#mturk-env").evaluate(
        "e => parseFloat(getComputedStyle(e).fontSize)")) >= 20

    # The annotator answered both tasks; the admin exports the results as CSV.
    submit_as(alice, uploaded, "AB")
    page.goto(reverse("admin:annotation_batch_changelist"))
    page.check(f"input[name=_selected_action][value='{uploaded.pk}']")
    page.select_option("select[name=action]", "export_results_csv")
    with page.expect_download() as download:
        page.click("button[name=index]")
    rows = list(csv.DictReader(io.StringIO(download.value.path().read_text("utf-8"))))
    assert len(rows) == 2
    assert {r["worker"] for r in rows} == {"alice"}
    assert {r["status"] for r in rows} == {"submitted"}
    assert sorted(r["answer.choice"] for r in rows) == ["A", "B"]

    # The worker's page; one submission approved locally.
    page.goto(reverse("admin:annotation_worker_changelist"))
    page.locator("tr", has_text="alice").locator("a:has-text('Overview')").click()
    assert page.locator("#worker-person").inner_text() == "alice"
    assert page.locator("#worker-submitted").inner_text() == "2"
    table = page.locator("#worker-assignments tbody tr")
    assert table.count() == 2
    table.first.locator("input[name=assignment]").check()
    page.select_option("#id_decision", "approve")
    page.click("input[value='Apply to the ticked assignments']")
    assert "1 assignment(s) approved." in page.locator(".messagelist").inner_text()
    shown = sorted(table.nth(i).locator("td").nth(3).inner_text() for i in range(2))
    assert shown == ["approved", "submitted"]


# --- the analyst -----------------------------------------------------------------------------

@pytest.fixture
def held_report(monkeypatch):
    """The report build waits at its start for ``held_report.set()``, so the test sees the
    progress bar before the build can finish (released at teardown)."""
    from agreement import tasks

    gate = threading.Event()
    real = tasks.report_build
    monkeypatch.setattr(tasks, "report_build", lambda pk: (gate.wait(30), real(pk))[1])
    yield gate
    gate.set()
    wait_for_jobs(60)


def test_analysts_day(page_for, analyst, held_report):
    comparisons = build_study()
    page = log_in(page_for, analyst, lands_on=ANALYSIS)

    # Leaderboard, from the home's list of judgment sources.
    page.locator("#leaderboards a", has_text="human").click()
    page.wait_for_url("**/leaderboard/**")
    # the study's models have fewer than LEADERBOARD_MIN_MATCHES matches: listed, unranked
    board = page.locator("#provisional tbody")
    assert sorted(t.split()[0] for t in board.locator("tr td:nth-child(2)").all_inner_texts()
                  ) == ["M1", "M2", "M3"]
    assert "by human" in page.locator("#summary").inner_text()

    # A report: the page answers at once with a progress bar, then becomes the report.
    page.goto(ANALYSIS)
    page.click("text=New report")
    for box in page.locator("input[name=metrics]").all():
        if box.get_attribute("value") != "length":
            box.uncheck()
    page.fill("input[name=bootstrap_rounds]", "50")
    page.fill("input[name=title]", "Walk report")
    page.click("#generate")
    page.wait_for_url("**/reports/*/")
    report_url = page.url
    assert page.locator("#progress-bar").is_visible()
    assert page.locator("#progress-stage").inner_text() == "waiting to start"
    held_report.set()
    page.locator("#summary").wait_for(timeout=45_000)  # no reload by the test
    assert page.url == report_url
    assert page.locator("#progress").count() == 0
    assert "done" in page.locator("#status").inner_text()

    # Reading it: a table-of-contents link jumps to its section.
    link = page.locator("#toc a").nth(1)
    anchor = link.get_attribute("href")
    link.click()
    assert page.url.endswith(anchor)
    assert page.locator(anchor).is_visible()
    assert page.evaluate("a => document.querySelector(a).getBoundingClientRect().top",
                         anchor) < 200

    # Disagreement review: the 3/2 split item, adjudicated.
    page.goto(ANALYSIS)
    page.click("#review-link")
    page.select_option("#id_kind", "split")
    page.click("#review-filters button")
    items = page.locator("#review-items tbody tr")
    assert items.count() == 1 and "Question c3?" in items.inner_text()
    items.locator("a").first.click()
    page.wait_for_url(f"**/review/{comparisons['c3'].uuid}/**")
    assert page.locator("#human-votes tbody tr").count() == 5
    page.check("#ruling-B")
    page.fill("#id_note", "B reads the chart correctly.")
    page.click("#adjudicate-submit")
    page.wait_for_selector("#rulings")
    assert "Adjudicated: B." in page.locator(".flash").inner_text()
    assert analyst.username in page.locator("#rulings tbody tr").first.inner_text()
