"""Each role's day in real Chromium, from the login form on (issues #15 and #29, "Done when").

- The annotator: log in → available work → a batch's tasks (zoom an image in the viewer,
  keyboard and mouse) → the next task → "My work" with the pending earnings → the reason of a
  rejection, read on "My work".
- The admin, never opening /admin/: log in → dashboard → upload wizard (HIT type → columns →
  file) with a broken image URL flagged → preview a task as a worker → activate with the
  estimate → answers come in → review by filter (select all matching) and the keyboard →
  results downloaded with the tasks' inputs → the money page: approve the rest, a bonus, what is
  owed per worker (CSV) → everyone marked paid.
- The same admin's day in the Django admin (kept for staff): the sample file, activation
  action, the MTurk launch page, the export action, a worker's page.
- The analyst: log in → analysis home → leaderboard → generate a report (progress bar, then the
  same page becomes the report) → its table of contents → disagreement review → adjudicate;
  and a judge run started from the web (estimate against the budget, then start).

Data comes from the services and test builders; every assertion is on what the user sees (text,
addresses, the downloaded file).
"""
import csv
import io
import json
import threading
from datetime import timedelta
from decimal import Decimal

import pytest
from django.urls import reverse

from annotation.core.background import wait_for_jobs
from annotation.engine.services.batches import batch_create_from_rows, batch_set_status
from annotation.engine.services.claims import task_claim_next
from annotation.engine.services.submissions import assignment_submit
from annotation.engine.services.workers import worker_for_user
from annotation.models import Assignment, Batch, LocalPayout
from annotation.providers.services import local_assignment_reject
from judging.hits import BARS, SHAPES
from judging.judges.models import JudgeRun
from tests.agreement.study import build_study
from tests.factories import make_batch, make_workers
from tests.judging.judges.conftest import make_comparisons, make_judge, server  # noqa: F401

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

def _pictured_batch(live_server, tasks=3):
    """Tasks whose images the live server serves (the viewer needs a picture that loads)."""
    image = f"{live_server.url}/static/judging/samples/shapes-4.png"
    rows = [{"instruction": f"How many purple shapes? ({i})", "image_urls": [image],
             "response_a": "Four.", "response_b": "Three."} for i in range(1, tasks + 1)]
    batch = batch_create_from_rows(hit_type="pairwise_ab", title="Purple shapes", rows=rows,
                                   assignments_per_task=1, reward=Decimal("0.25"),
                                   min_seconds=0)
    return batch_set_status(batch, Batch.Status.ACTIVE)


def test_annotators_day(page_for, alice, live_server):
    batch = _pictured_batch(live_server)
    page = log_in(page_for, alice, lands_on=AVAILABLE)
    card = page.locator(f"#batch-{batch.uuid}")
    assert batch.title in card.inner_text() and "3 tasks" in card.inner_text()

    card.locator("a.start").click()
    page.wait_for_selector("#task-position:has-text('Task 1 of 3')")
    page.wait_for_load_state("load")  # the page's keyboard script is deferred
    page.locator(".images button.zoom").first.click()  # the image, zoomed in the viewer
    page.wait_for_selector(".viewer-container.viewer-in")
    picture = page.locator(".viewer-canvas img")
    picture.wait_for()
    width = picture.bounding_box()["width"]
    page.click(".viewer-zoom-in")
    page.click(".viewer-zoom-in")
    page.wait_for_function("w => document.querySelector('.viewer-canvas img')"
                           ".getBoundingClientRect().width > w * 1.15", arg=width)
    page.keyboard.press("Escape")
    page.wait_for_function("!document.body.classList.contains('viewer-open')")
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

    # The admin rejects the first answer with a reason; alice reads it on "My work".
    first = Assignment.objects.filter(batch=batch, status="submitted").order_by("pk").first()
    local_assignment_reject(first, reason="The count ignores the shape at the bottom left.")
    page.reload()
    reason = page.locator("#history .rejection-reason")
    assert reason.inner_text() == "Reason: The count ignores the shape at the bottom left."
    assert "rejected (unpaid)" in page.locator("#history").inner_text()
    assert page.locator("#earned-pending").inner_text() == "$0.25"


# --- the admin -------------------------------------------------------------------------------

BROKEN = "http://10.1.2.3/gone.png"  # a private address: the upload's check refuses it


def _upload_rows():
    good = [{"instruction": f"Which answer counts right? ({i})", "image_urls": [image],
             "response_a": f"Right answer {i}.", "response_b": f"Wrong answer {i}."}
            for i, image in enumerate((SHAPES, BARS, SHAPES), start=1)]
    return [*good, {"instruction": "Where is the picture?", "image_urls": [BROKEN],
                    "response_a": "Here.", "response_b": "There."}]


def _download(page, selector) -> str:
    with page.expect_download() as download:
        page.click(selector)
    return download.value.path().read_text("utf-8")


def test_admins_day(page_for, admin, tmp_path):
    """From the login form to everyone paid, and not one request to /admin/."""
    upload = tmp_path / "rows.jsonl"
    upload.write_text("".join(json.dumps(row) + "\n" for row in _upload_rows()))
    page = log_in(page_for, admin, lands_on=DASHBOARD)
    visited = []
    page.on("request", lambda request: visited.append(request.url))
    page.route("http://10.1.2.3/**", lambda route: route.abort())

    page.click("text=Upload a batch")  # step 1: the HIT type, by its name
    page.click("#hit-types >> text=Which response is better?")
    assert page.locator("#columns table code:text-is('response_a')").is_visible()  # step 2
    page.fill("#id_title", "Counting check")
    page.fill("#id_instructions", "Pick the answer that counts **right**.")
    page.fill("#id_assignments_per_task", "2")
    page.fill("#id_reward", "0.05")
    page.fill("#id_min_seconds", "0")
    page.set_input_files("#id_file", str(upload))
    page.click("#upload-submit")
    page.wait_for_selector("#image-problems")  # the draft's page, its broken image listed
    problems = page.locator("#image-problems").inner_text()
    assert BROKEN in problems and "1 broken image URL" in problems
    assert SHAPES not in problems
    batch = Batch.objects.get(title="Counting check")
    assert batch.status == "draft"
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280  # fits the window

    page.click("#task-list >> text=Task 1")  # preview as a worker: the real task page
    page.wait_for_selector("text=Right answer 1.")
    assert page.locator("#submit-btn").is_disabled()
    assert "Preview as a worker of task 1" in page.content()
    assert page.locator(".instructions .prose strong").inner_text() == "right"  # Markdown, rendered
    page.go_back()

    assert "$0.40" in page.locator("#activate-form").inner_text()  # 4 tasks × 2 × $0.05
    page.click("#activate")  # refused until the broken image is accepted
    page.wait_for_selector(".flash:has-text('broken')")
    assert Batch.objects.get(pk=batch.pk).status == "draft"
    page.check("#images-checked")
    page.click("#activate")
    page.wait_for_selector("#batch-status:has-text('Active')")

    batch.refresh_from_db()
    workers = make_workers(2)
    for worker, choices in zip(workers, ("AAAB", "AABB"), strict=True):
        for choice in choices:
            lease = task_claim_next(batch=batch, worker=worker)
            assignment_submit(assignment=lease, data={"choice": choice},
                              now=lease.claimed_at + timedelta(seconds=30))

    # Review by filter: every answer "A", on every page, approved at once.
    page.click("#review-link")
    page.wait_for_selector("#rows")
    assert "8</strong> answers match" in page.content()
    assert page.locator(".review-row").first.locator(".instruction-small").is_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    page.select_option("select[name=answer]", "choice:A")
    page.click("#apply-filters")
    page.wait_for_selector("#match-count:has-text('5 answers')")
    page.check("#id_matching")
    page.click("#decide")
    page.wait_for_selector(".flash:has-text('5 assignment(s) approved')")
    assert set(Assignment.objects.filter(batch=batch, status="approved")
               .values_list("answer__choice", flat=True)) == {"A"}
    page.goto(f"/batches/{batch.uuid}/review/")  # the keyboard: j to the first row, a approves
    page.wait_for_selector("#match-count:has-text('3 answers')")
    page.wait_for_load_state("load")
    page.keyboard.press("j")
    page.keyboard.press("a")
    page.wait_for_selector(".flash:has-text('1 assignment(s) approved')")
    assert Assignment.objects.filter(batch=batch, status="approved").count() == 6

    # The results, from the batch's page, with the tasks' inputs beside the answers.
    page.goto(f"/batches/{batch.uuid}/")
    rows = list(csv.DictReader(io.StringIO(_download(page, "#results-downloads >> text=CSV"))))
    assert len(rows) == 8
    assert {r["input.instruction"] for r in rows} >= {"Which answer counts right? (1)",
                                                      "Where is the picture?"}
    assert {r["input.response_a"] for r in rows} >= {"Right answer 1.", "Here."}
    assert sorted(r["answer.choice"] for r in rows) == ["A"] * 5 + ["B"] * 3

    # The money page: approve the rest, a bonus, what is owed, everyone marked paid.
    page.click("#money-link")
    page.wait_for_selector("#spend")
    assert page.locator("#approved").inner_text() == "$0.30"  # 6 × $0.05, no fees locally
    page.click("#approve-all")
    page.wait_for_selector(".flash:has-text('2 assignment(s) approved')")
    first, second = sorted(workers, key=lambda w: w.external_id)
    page.select_option("#id_worker", str(first.uuid))
    page.fill("#id_amount", "0.50")
    page.fill("#id_reason", "Careful <b>counting</b>")
    page.click("#give-bonus")
    page.wait_for_selector(".flash:has-text('Bonus of $0.50')")
    assert "Careful <b>counting</b>" in page.locator("#bonus-list").inner_text()  # as text
    assert page.locator("#owed").inner_text() == "$0.90"  # 8 × $0.05 + $0.50
    owed = {r["worker_id"]: r for r in csv.DictReader(io.StringIO(
        _download(page, "#export-owed")))}
    assert (owed[first.external_id]["owed_usd"], owed[second.external_id]["owed_usd"]) == (
        "0.70", "0.20")
    page.fill("#pay-all-reference", "Bank transfer 2026-11-26")
    page.click("#mark-all-paid")
    page.wait_for_selector(".flash:has-text('Recorded $0.90 paid to 2 workers')")
    assert page.locator("#owed").inner_text() == "$0.00"
    assert page.locator("#paid").inner_text() == "$0.90"
    assert page.locator("#owed-table .owed").all_inner_texts() == ["$0.00", "$0.00"]
    assert sorted(LocalPayout.objects.values_list("amount", flat=True)) == [Decimal("0.20"),
                                                                          Decimal("0.70")]
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    assert not [url for url in visited if "/admin/" in url]


def test_admins_day_in_the_django_admin(page_for, admin, alice, tmp_path):
    """The Django admin stays for staff: its batch pages still work end to end."""
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
    # dashboard's button leads to the product's wizard: ``test_admins_day``).
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


def test_analyst_starts_a_judge_run_from_the_web(page_for, analyst, server):  # noqa: F811
    make_comparisons(3)
    judge = make_judge(server, name="walk-judge")
    page = log_in(page_for, analyst, lands_on=ANALYSIS)
    page.click("nav >> text=Judge runs")
    page.click("#new-run")
    page.wait_for_url("**/eval/judges/new/")
    page.select_option("#id_judge", str(judge.uuid))
    page.fill("#id_budget", "5")
    page.click("button[name=estimate]")
    page.wait_for_selector("#estimate")
    assert page.locator("#budget").inner_text() == "$5.00"
    assert "both (A–B and B–A)" in page.locator("#estimate").inner_text()
    assert not JudgeRun.objects.exists()  # the estimate starts nothing
    page.click("#start-run")
    page.wait_for_url("**/eval/judges/runs/*/")
    run = JudgeRun.objects.get()
    assert page.url.endswith(f"/eval/judges/runs/{run.uuid}/")
    assert "Run started over 6 units." in page.locator(".flash").inner_text()
    assert (run.units_total, run.budget, run.created_by) == (6, Decimal("5"), analyst.username)
    wait_for_jobs(60)  # the run's calls reach the stand-in judge, not the test's teardown
