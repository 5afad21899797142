"""The admin's batch day in real Chromium, inside the product and never through /admin/
(issue #29, parts 1 and 2): log in → dashboard → upload wizard (HIT type → columns → file)
with a broken image URL flagged → preview a task as a worker → activate with the estimate →
answers come in → review by filter (select all matching) → approve; one more answer approved
from the keyboard (j, a)."""
import json
from datetime import timedelta

import pytest

from annotation.engine.services.claims import task_claim_next
from annotation.engine.services.submissions import assignment_submit
from annotation.models import Assignment, Batch
from judging.hits import BARS, SHAPES
from tests.factories import make_workers

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

BROKEN = "http://10.1.2.3/gone.png"  # a private address: the upload's check refuses it


def _rows():
    good = [{"instruction": f"Which answer counts right? ({i})", "image_urls": [image],
             "response_a": f"Right answer {i}.", "response_b": f"Wrong answer {i}."}
            for i, image in enumerate((SHAPES, BARS, SHAPES), start=1)]
    return [*good, {"instruction": "Where is the picture?", "image_urls": [BROKEN],
                    "response_a": "Here.", "response_b": "There."}]


def test_admins_batch_day_without_the_django_admin(page_for, admin, tmp_path):
    upload = tmp_path / "rows.jsonl"
    upload.write_text("".join(json.dumps(row) + "\n" for row in _rows()))
    page = page_for(None)
    visited = []
    page.on("request", lambda request: visited.append(request.url))
    page.route("http://10.1.2.3/**", lambda route: route.abort())
    page.goto("/")
    page.fill("input[name=username]", admin.username)
    page.fill("input[name=password]", "pw-" + admin.username)
    page.click("button:has-text('Log in')")
    page.wait_for_url("**/study/dashboard/")

    page.click("text=Upload a batch")  # step 1: the HIT type, by its name
    page.click("#hit-types >> text=Which response is better?")
    assert page.locator("#columns table code:text-is('response_a')").is_visible()  # step 2
    page.fill("#id_title", "Counting check")
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
    assert Assignment.objects.filter(batch=batch, status="approved").count() == 5
    assert set(Assignment.objects.filter(batch=batch, status="approved")
               .values_list("answer__choice", flat=True)) == {"A"}

    page.goto(f"/batches/{batch.uuid}/review/")  # the keyboard: j to the first row, a approves
    page.wait_for_selector("#match-count:has-text('3 answers')")
    page.wait_for_load_state("load")
    page.keyboard.press("j")
    page.keyboard.press("a")
    page.wait_for_selector(".flash:has-text('1 assignment(s) approved')")
    assert Assignment.objects.filter(batch=batch, status="approved").count() == 6
    assert not [url for url in visited if "/admin/" in url]
