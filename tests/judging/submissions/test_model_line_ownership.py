"""A model line belongs to the submitter who started it: another submitter's post of the same
name (in any letter case) is refused through the API, the page and the service alike, writes
nothing and does not name the owner; an admin may add a version to any line, which stays its
owner's; a line an admin added (no owner) only an admin may extend."""
import pytest
from django.contrib.auth.models import Group, User
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from judging.models import EvalModel
from judging.submissions.models import Submission
from judging.submissions.services import SubmissionRefused, submission_create

from .test_submissions import _counts, _jsonl, bench  # noqa: F401  (bench is a fixture)


def _submitter(username, *, staff=False):
    user = User.objects.create_user(username, email=f"{username}@example.org",
                                    password="pw-long-enough-1", is_staff=staff)
    user.groups.add(Group.objects.get_or_create(name="submitter")[0])
    return user


def _done(submission):
    """Frees the submitter's one place in flight, as a finished run does."""
    Submission.objects.filter(pk=submission.pk).update(status=Submission.Status.DONE)


@pytest.mark.django_db
class TestModelLineOwnership:
    @pytest.fixture(autouse=True)
    def _setup(self, bench):  # noqa: F811
        self.instances = bench["instances"][:3]
        self.alice, self.bob = _submitter("alice-owner"), _submitter("bob-other")

    def _post(self, user, name):
        api = APIClient()
        api.force_authenticate(user)
        upload = SimpleUploadedFile("p.jsonl", _jsonl(self.instances))
        return api.post("/api/eval/submissions/", {"name": name, "file": upload},
                        format="multipart")

    def test_another_submitter_is_refused_through_the_api_and_nothing_is_written(self):
        first = self._post(self.alice, "NewVLM")
        assert first.status_code == 201 and first.json()["model"] == "NewVLM v1"
        _done(Submission.objects.get(submitter=self.alice))
        before = _counts()
        for spelling in ("NewVLM", "newvlm", "  NEWVLM "):
            refused = self._post(self.bob, spelling)
            assert refused.status_code == 400, spelling
            detail = refused.json()["detail"]
            assert "belongs to another submitter; choose another name" in detail
            assert "alice" not in detail
        assert _counts() == before
        assert not Submission.objects.filter(submitter=self.bob).exists()
        again = self._post(self.alice, "newVLM")  # the owner, in another case: the same line
        assert again.status_code == 201 and again.json()["model"] == "NewVLM v2"
        assert EvalModel.objects.get(name="NewVLM v2").owner == self.alice

    def test_the_submission_page_shows_the_refusal(self, client):
        submission_create(submitter=self.alice, name="PageVLM", file_name="p.jsonl",
                          data=_jsonl(self.instances))
        client.force_login(self.bob)
        page = client.post("/eval/submit/", {
            "name": "PageVLM", "file": SimpleUploadedFile("p.jsonl", _jsonl(self.instances))})
        assert page.status_code == 400
        assert b"belongs to another submitter; choose another name" in page.content
        assert b"alice" not in page.content
        assert not Submission.objects.filter(submitter=self.bob).exists()

    def test_the_service_refuses_before_reading_the_file(self):
        submission_create(submitter=self.alice, name="SvcVLM", file_name="p.jsonl",
                          data=_jsonl(self.instances))
        with pytest.raises(SubmissionRefused, match="belongs to another submitter"):
            submission_create(submitter=self.bob, name="svcvlm", file_name="p.jsonl",
                              data=b"not even a valid file")

    def test_an_admin_adds_a_version_that_stays_the_owners(self):
        first = submission_create(submitter=self.alice, name="AdmVLM", file_name="p.jsonl",
                                  data=_jsonl(self.instances))
        _done(first)
        admin = _submitter("site-admin", staff=True)
        added = submission_create(submitter=admin, name="AdmVLM", file_name="p.jsonl",
                                  data=_jsonl(self.instances))
        assert (added.version, added.submitter, added.model.owner) == (2, admin, self.alice)
        _done(added)
        third = self._post(self.alice, "AdmVLM")
        assert third.status_code == 201 and third.json()["version"] == 3
        assert self._post(self.bob, "AdmVLM").status_code == 400

    def test_a_line_an_admin_added_only_an_admin_extends(self):
        # "Anchor-7B" came from an admin's import (no owner), as every model before owners did.
        assert EvalModel.objects.get(name="Anchor-7B").owner is None
        refused = self._post(self.bob, "anchor-7b")
        assert refused.status_code == 400
        assert "held by the site's admins; only an admin may add a version" in \
            refused.json()["detail"]
        EvalModel.objects.create(name="Legacy v1")  # an unowned versioned name
        assert self._post(self.alice, "Legacy").status_code == 400
        admin = _submitter("site-admin", staff=True)
        added = submission_create(submitter=admin, name="Anchor-7B", file_name="p.jsonl",
                                  data=_jsonl(self.instances))
        assert added.model.name == "Anchor-7B v1" and added.model.owner is None

    def test_the_model_no_longer_carries_the_submitters_username(self):
        sub = submission_create(submitter=self.alice, name="QuietVLM", file_name="p.jsonl",
                                data=_jsonl(self.instances))
        assert "alice" not in sub.model.notes


@pytest.mark.django_db
def test_the_migration_gives_submitted_models_their_submitters():
    """Lines submitted before owners existed belong to their submitters; other models stay
    admin-held."""
    from importlib import import_module
    from pathlib import Path

    from django.apps import apps

    import judging.migrations

    module = next(Path(judging.migrations.__path__[0]).glob("*_model_owner.py")).stem
    alice = _submitter("alice-owner")
    submitted = EvalModel.objects.create(name="Old v1")
    Submission.objects.create(submitter=alice, name="Old", version=1, model=submitted,
                              file_name="p.jsonl", status=Submission.Status.DONE)
    imported = EvalModel.objects.create(name="Imported")
    import_module(f"judging.migrations.{module}").owners_from_submissions(apps, None)
    submitted.refresh_from_db()
    imported.refresh_from_db()
    assert (submitted.owner, imported.owner) == (alice, None)
