"""The sample an admin tries the product with is a trial batch whose pictures load offline
(issue #27, item 5): created from the upload page, its votes stay off the human board."""
from datetime import timedelta
from urllib.parse import urlsplit

import pytest
from django.conf import settings
from django.contrib.staticfiles import finders
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from rest_framework.test import APIClient

from annotation.engine.hit_types import all_hit_types
from annotation.engine.services.batches import batch_set_status
from annotation.engine.services.claims import task_claim_next
from annotation.engine.services.submissions import assignment_submit
from annotation.models import Batch, InstanceImage
from judging.leaderboards import leaderboard_build
from judging.models import Comparison
from tests.factories import make_workers, pairwise_rows

pytestmark = pytest.mark.django_db
TRY = "admin:annotation_batch_upload_sample_try"
UPLOAD = "admin:annotation_batch_upload"


def _local_static(url: str) -> str | None:
    """The static file a URL on this server names, or None when it points elsewhere."""
    base = settings.PUBLIC_BASE_URL.rstrip("/") + settings.STATIC_URL
    if not url.startswith(base):
        return None
    return finders.find(urlsplit(url).path.removeprefix(settings.STATIC_URL))


class TestSampleTrialBatch:
    def test_the_upload_page_offers_each_sample_as_a_trial_batch(self, admin_client_):
        page = admin_client_.get(reverse(UPLOAD)).content.decode()
        assert page.count(f'action="{reverse(TRY)}"') == sum(
            bool(h.example_rows) for h in all_hit_types())
        assert 'name="trial"' in page

    def test_trying_the_sample_creates_a_trial_draft_whose_images_are_local(self,
                                                                           admin_client_):
        response = admin_client_.post(reverse(TRY), {"hit_type": "pairwise_ab"})
        batch = Batch.objects.get()
        assert response.status_code == 302 and response["Location"].endswith(
            f"/{batch.pk}/change/")
        assert batch.trial and batch.status == Batch.Status.DRAFT
        comparisons = Comparison.objects.filter(
            uuid__in=[t.payload["comparison"] for t in batch.tasks.all()])
        urls = list(InstanceImage.objects.filter(
            instance__in=[c.instance_id for c in comparisons])
            .values_list("image__source_url", flat=True))
        assert len(urls) == 2
        assert all(_local_static(u) for u in urls), urls  # served by this server, no internet

    def test_no_sample_names_an_image_on_another_host(self):
        for hit in all_hit_types():
            for row in hit.example_rows:
                for url in row.get("image_urls", []):
                    assert _local_static(url), (hit.slug, url)

    def test_votes_on_the_tried_sample_stay_off_the_human_board(self, admin_client_):
        admin_client_.post(reverse(TRY), {"hit_type": "pairwise_ab"})
        batch = batch_set_status(Batch.objects.get(), Batch.Status.ACTIVE)
        worker = make_workers(1)[0]
        while (a := task_claim_next(batch=batch, worker=worker)) is not None:
            assignment_submit(assignment=a, data={"choice": "A"},
                              now=a.claimed_at + timedelta(seconds=60))
        assert leaderboard_build(bootstrap_rounds=20).judgments == 0
        assert leaderboard_build(bootstrap_rounds=20, include_trial=True).judgments == 2

    def test_the_upload_forms_trial_box_makes_a_trial_batch(self, admin_client_):
        body = b"instruction,response_a,response_b\nWhat is it?,A cat.,A dog.\n"
        admin_client_.post(reverse(UPLOAD), {
            "hit_type": "pairwise_ab", "title": "tryout", "provider": "local",
            "assignments_per_task": 1, "reward": "0", "lease_seconds": 1800, "min_seconds": 0,
            "trial": "on", "file": SimpleUploadedFile("rows.csv", body)})
        assert Batch.objects.get(title="tryout").trial is True

    def test_a_get_or_an_unknown_type_creates_nothing(self, admin_client_):
        assert admin_client_.get(reverse(TRY)).status_code == 302
        assert admin_client_.post(reverse(TRY), {"hit_type": "nope"}).status_code == 404
        assert not Batch.objects.exists()

    def test_the_api_creates_a_trial_batch_and_says_so(self, admin):
        api = APIClient()
        api.force_authenticate(admin)
        created = api.post("/api/batches/", {"hit_type": "pairwise_ab", "title": "api try",
                                             "trial": True, "rows": pairwise_rows(2)},
                           format="json")
        assert created.status_code == 201, created.content
        assert created.data["trial"] is True and Batch.objects.get(title="api try").trial
