"""Issue #28's done-when walk in real Chromium: beside the demo's (default) study, an admin
creates a second study from its page, uploads a batch to it through its wizard, predictions and
votes go into it through the services, and the first study's boards (JSON and CSV), report,
review page and exports are byte-identical before and after (the boards recomputed, not read
from the cache). An analyst of the second study gets 404 (never a 403 naming it) on the first
study's pages and API; an anonymous visitor reads a public study's board and gets 404 on a
private one."""
import json
import re

import pytest
from django.core.cache import cache
from django.urls import reverse

from agreement.models import Report
from agreement.services.reports import report_build, report_create
from annotation.models import Batch, Instance
from judging.demo import load_demo
from judging.hits import SHAPES
from judging.models import Comparison, Judgment
from judging.services.judgments.exports import judgments_export
from judging.services.judgments.record import judgment_record
from judging.services.responses import predictions_import
from studies.models import Study, StudyMembership
from studies.selectors import study_default

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

FIRST = "VisIT demo study"  # the default study's name: must never reach a non-member
CSRF = re.compile(r'name="csrfmiddlewaretoken" value="[^"]*"')
MAIN = re.compile(r"<main[^>]*>.*</main>", re.S)  # a page's own part (the header lists studies)
REPORT_PARAMS = {"split": "all", "seed": 0, "bootstrap_rounds": 20, "metrics": []}


def _first_study_bytes(page, report) -> dict[str, bytes]:
    """Everything of the first study the walk must leave alone, fetched through Chromium's own
    session (of a page, its <main> without the per-request CSRF tokens: the header's study
    switcher rightly lists the new study)."""
    default = study_default()
    urls = ["/eval/leaderboard.json", "/eval/leaderboard.csv", "/eval/leaderboard/scores.csv",
            f"/api/studies/{default.slug}/leaderboard/?rounds=50",
            f"/api/studies/{default.slug}/score-leaderboard/?rounds=50",
            f"/reports/{report.uuid}/", "/review/", f"/s/{default.slug}/review/",
            *[reverse("batch-results", kwargs={"uuid": b.uuid, "fmt": "csv"})
              for b in Batch.objects.filter(study=default).order_by("pk")],
            *[f"/reports/{report.uuid}/files/{name}"
              for name in report.files.order_by("name").values_list("name", flat=True)]]
    cache.clear()  # every board recomputed from the rows, not read back
    out = {}
    for url in urls:
        response = page.request.get(url)
        assert response.status == 200, url
        out[url] = (CSRF.sub("", MAIN.search(response.text()).group()).encode()
                    if url.endswith("/") else response.body())
    out["judgments_export.csv"] = judgments_export("csv", study=default).encode()
    out["judgments_export.visitbench"] = judgments_export("visitbench", study=default).encode()
    return out


def _built_report(study) -> Report:
    report = report_build(report_create(REPORT_PARAMS, title="Demo report", study=study).pk)
    assert report.status == Report.Status.DONE, report.error
    return report


def test_a_second_study_leaves_the_first_byte_identical(page_for, admin, django_user_model,
                                                        tmp_path):
    load_demo(seed=3)
    Study.objects.filter(pk=study_default().pk).update(name=FIRST)
    report = _built_report(study_default())
    admin_page = page_for(admin)
    before = _first_study_bytes(admin_page, report)
    assert before["/eval/leaderboard.csv"].count(b"\n") > 3  # the demo's models are on it

    # An admin creates the second study from its page, then uploads a batch to it.
    admin_page.goto("/s/new/")
    admin_page.fill("#id_name", "Second bench")
    admin_page.fill("#id_slug", "second")
    admin_page.select_option("#id_visibility", "private")
    admin_page.click("#create-study")
    assert admin_page.url.endswith("/s/second/")
    second = Study.objects.get(slug="second")
    admin_page.click("#batches-link")
    admin_page.click("#new-batch")
    admin_page.click('a[href="?hit_type=pairwise_ab"]')
    rows = tmp_path / "second.jsonl"
    rows.write_text("".join(json.dumps({
        "item_id": f"s2-{i}", "instruction": f"Which answer names shape {i}?",
        "image_urls": [SHAPES], "model_a": "second-a", "response_a": f"Shape {i} is round.",
        "model_b": "second-b", "response_b": f"Shape {i} is square."}) + "\n"
        for i in range(1, 4)))
    admin_page.fill("#id_title", "Second study batch")
    admin_page.set_input_files("#id_file", str(rows))
    admin_page.click("#upload-submit")
    batch = Batch.objects.get(title="Second study batch")
    assert batch.study == second
    assert admin_page.url.endswith(f"/s/second/batches/{batch.uuid}/")
    assert "Second study batch" in admin_page.text_content("main")

    # Predictions (matched by item_id) and votes go into the second study through the services.
    instances = list(Instance.objects.filter(study=second).order_by("pk"))
    assert len(instances) == 3
    predictions = "".join(json.dumps({"item_id": f"s2-{n}", "prediction": f"Answer {n}"}) + "\n"
                          for n in range(1, 4))
    imported = predictions_import("preds.jsonl", predictions.encode(), model="second-model",
                                  study=second)
    assert (imported.created, imported.unmatched) == (3, [])
    for comparison in Comparison.objects.filter(instance__study=second):
        for k, choice in enumerate("AAB"):
            judgment_record(source=Judgment.HUMAN, annotator=f"second-{k}",
                            comparison=comparison, choice=choice)

    # An analyst of the second study: the first study is a 404, pages and API alike.
    analyst_b = django_user_model.objects.create_user(username="analyst-b")
    StudyMembership.objects.create(user=analyst_b, study=second, role="analyst")
    page_b = page_for(analyst_b)
    default = study_default().slug
    for url in (f"/s/{default}/", f"/s/{default}/board/", f"/s/{default}/reports/",
                f"/s/{default}/reports/{report.uuid}/", f"/s/{default}/review/",
                f"/s/{default}/judges/", f"/s/{default}/batches/",
                f"/api/studies/{default}/leaderboard/"):
        answer = page_b.goto(url) if not url.startswith("/api/") else None
        response = answer if answer is not None else page_b.request.get(url)
        assert response.status == 404, url
        assert FIRST not in (response.text()), url
    assert page_b.goto("/s/second/reports/").status == 200
    assert page_b.goto(f"/s/second/batches/{batch.uuid}/").status == 404  # analysts: no batches

    # The owner makes the second study public; an anonymous visitor reads its board only.
    admin_page.goto("/s/second/settings/")
    admin_page.select_option("#id_visibility", "public")
    admin_page.click("#save-settings")
    assert Study.objects.get(slug="second").is_public
    anonymous = page_for(None)
    assert anonymous.goto("/s/second/board/").status == 200
    board = anonymous.text_content("main")
    assert "second-a" in board and "second-b" in board
    answer = anonymous.goto(f"/s/{default}/board/")
    assert answer.status == 404 and FIRST not in answer.text()

    # The first study, byte for byte; a report built again with the same seed, number for number.
    after = _first_study_bytes(admin_page, report)
    assert sorted(after) == sorted(before)
    changed = [url for url in before if before[url] != after[url]]
    assert not changed, changed
    again = _built_report(study_default())
    assert _without_time(again.data) == _without_time(report.data)


def _without_time(data: dict) -> dict:
    """A report's numbers and snapshot, without the moment it was generated."""
    return {**data, "snapshot": {k: v for k, v in data["snapshot"].items()
                                 if k != "generated_at"}}
