"""REST API: token auth, explicit roles, annotators limited to their own assignments."""
import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.models import Assignment, Batch
from tests.factories import make_batch, pairwise_rows

pytestmark = pytest.mark.django_db


def _api(user=None):
    client = APIClient()
    if user is not None:
        token, _ = Token.objects.get_or_create(user=user)
        client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


def test_admin_creates_batch_atomically_and_reads_progress(admin):
    api = _api(admin)
    rows = pairwise_rows(3)
    created = api.post("/api/batches/", {"hit_type": "pairwise_ab", "title": "API batch",
                                         "assignments_per_task": 2, "rows": rows}, format="json")
    assert created.status_code == 201, created.content
    uuid = created.data["uuid"]
    assert api.get(f"/api/batches/{uuid}/progress/").data == {
        "tasks": 3, "slots": 6, "done": 0, "leased": 0, "remaining": 6, "late_uncounted": 0}
    bad_rows = rows + [{"instruction": "x", "response_a": "only one"}]
    refused = api.post("/api/batches/", {"hit_type": "pairwise_ab", "title": "bad",
                                         "rows": bad_rows}, format="json")
    assert refused.status_code == 400 and "Row 4" in str(refused.data)
    assert Batch.objects.count() == 1
    assert api.post(f"/api/batches/{uuid}/status/active/").data["status"] == "active"
    assert api.post(f"/api/batches/{uuid}/status/draft/").status_code == 400


@pytest.mark.parametrize("path", ["/api/batches/", "/api/tasks/", "/api/workers/",
                                  "/api/assignments/"])
def test_admin_only_endpoints(path, admin, analyst, alice):
    assert _api().get(path).status_code == 401
    assert _api(alice).get(path).status_code == 403
    assert _api(analyst).get(path).status_code == 403
    assert _api(admin).get(path).status_code == 200


def test_annotator_claims_and_submits_own_work_only(alice, bob):
    batch = make_batch(2, n=1)
    claimed = _api(alice).post(f"/api/my/assignments/claim/{batch.uuid}/")
    assert claimed.status_code == 201
    uuid = claimed.data["uuid"]
    assert claimed.data["payload"]["response_a"] == "Answer A for item 1."
    assert _api(bob).get(f"/api/my/assignments/{uuid}/").status_code == 404
    stolen = _api(bob).post(f"/api/my/assignments/{uuid}/submit/", {"answer": {"choice": "A"}},
                            format="json")
    assert stolen.status_code == 404
    bad = _api(alice).post(f"/api/my/assignments/{uuid}/submit/", {"answer": {"choice": "Z"}},
                           format="json")
    assert bad.status_code == 400
    ok = _api(alice).post(f"/api/my/assignments/{uuid}/submit/", {"answer": {"choice": "B"}},
                          format="json")
    assert ok.status_code == 201 and ok.data["answer"] == {"choice": "B"}
    again = _api(alice).post(f"/api/my/assignments/{uuid}/submit/", {"answer": {"choice": "A"}},
                             format="json")
    assert again.status_code == 200 and again.data["answer"] == {"choice": "B"}
    assert [a["uuid"] for a in _api(bob).get("/api/my/assignments/").data["results"]] == []
    assert Assignment.objects.get(uuid=uuid).answer == {"choice": "B"}


def test_openapi_schema_needs_login_and_lists_endpoints(admin):
    assert _api().get("/api/schema/").status_code == 401
    schema = _api(admin).get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert schema.status_code == 200
    assert "/api/my/assignments/{uuid}/submit/" in schema.json()["paths"]


def test_annotators_never_learn_which_tasks_were_gold(alice, admin):
    """Neither the submit answer nor the own-assignment list says whether a task was gold or
    how the worker did on it; admins still see it."""
    batch = make_batch(2, n=1, gold_every=1)
    api = _api(alice)
    seen = []
    while (claimed := api.post(f"/api/my/assignments/claim/{batch.uuid}/")).status_code == 201:
        submitted = api.post(f"/api/my/assignments/{claimed.data['uuid']}/submit/",
                             {"answer": {"choice": "A"}}, format="json")
        assert submitted.status_code == 201
        seen += [claimed.data, submitted.data]
    assert len(seen) == 4
    listed = api.get("/api/my/assignments/").data["results"]
    detail = api.get(f"/api/my/assignments/{listed[0]['uuid']}/").data
    for shown in [*seen, *listed, detail]:
        assert "gold_correct" not in shown and "gold" not in str(shown).lower()
    assert Assignment.objects.filter(gold_correct__isnull=False).exists()
    assert {"gold_correct"} <= set(_api(admin).get("/api/assignments/").data["results"][0])
