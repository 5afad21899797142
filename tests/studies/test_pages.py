"""A study's pages and API: members read them, a public study's board is open to anyone, and
everyone else gets the 404 a missing study gets (never a 403 naming it)."""
import pytest
from django.test import Client

from studies.models import StudyMembership, default_study_id
from tests.studies import builders

pytestmark = pytest.mark.django_db

SECRET = "Project Nightingale"  # the private study's name: must never reach a non-member


def _client(user=None) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def _member(django_user_model, username, study, role):
    user = django_user_model.objects.create_user(username=username, password="pw")
    StudyMembership.objects.create(user=user, study=study, role=role)
    return user


@pytest.fixture
def studies():
    private = builders.study("nightingale")
    private.name = SECRET
    private.save()
    public = builders.study("open-bench", public=True)
    for study, winner in ((private, "secret-model"), (public, "open-model")):
        ms = builders.models(study, winner, "baseline", reference="ref")
        builders.voted(study, [(ms[winner], ms["ref"], "AAAAB"), (ms["baseline"], ms["ref"], "BBBBA"),
                               (ms[winner], ms["baseline"], "AAAAA")] * 4)
        builders.grades(study, ms[winner], [5, 4])
    return private, public


def test_a_public_board_is_open_to_anyone_and_shows_cis_and_categories(studies):
    _, public = studies
    page = _client().get(f"/s/{public.slug}/board/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "open-model" in html and "secret-model" not in html
    assert 'id="leaderboard"' in html and "95 % CI" in html and 'id="score-leaderboard"' in html
    assert 'id="categories-heading"' in html
    api = _client().get(f"/api/studies/{public.slug}/leaderboard/?rounds=20")
    assert api.status_code == 200
    rows = api.json()["rows"]
    assert {r["model"] for r in rows} == {"open-model", "baseline", "ref"}
    assert all(r["ci_low"] <= r["rating"] <= r["ci_high"] for r in rows)
    scores = _client().get(f"/api/studies/{public.slug}/score-leaderboard/?rounds=20").json()
    assert [r["model"] for r in scores["rows"]] == ["open-model"]


def test_a_private_study_is_a_404_to_everyone_but_its_members(studies, django_user_model, admin):
    private, public = studies
    outsider = _member(django_user_model, "outsider", public, "owner")
    viewer = _member(django_user_model, "viewer", private, "viewer")
    for path in (f"/s/{private.slug}/board/", f"/api/studies/{private.slug}/leaderboard/",
                 f"/api/studies/{private.slug}/"):
        for client in (_client(), _client(outsider)):
            response = client.get(path)
            assert response.status_code == 404, (path, response.status_code)
            assert SECRET not in response.content.decode()
        assert _client(viewer).get(path).status_code == 200, path
        assert _client(admin).get(path).status_code == 200, path
    # Same answer as a study that does not exist.
    assert _client(outsider).get("/s/no-such-study/").status_code == 404
    home = _client(outsider).get(f"/s/{private.slug}/")
    assert home.status_code == 404 and SECRET not in home.content.decode()
    assert _client().get(f"/s/{private.slug}/")["Location"].startswith("/accounts/login/")


def test_the_home_shows_analysts_more_than_viewers(studies, django_user_model):
    private, _ = studies
    viewer = _member(django_user_model, "viewer", private, "viewer")
    analyst = _member(django_user_model, "study-analyst", private, "analyst")
    seen = _client(viewer).get(f"/s/{private.slug}/").content.decode()
    assert SECRET in seen and 'id="study-batches"' not in seen
    analysed = _client(analyst).get(f"/s/{private.slug}/").content.decode()
    assert 'id="study-batches"' in analysed and 'id="study-switcher"' in analysed


def test_the_switcher_and_list_show_only_the_users_studies(studies, django_user_model):
    private, public = studies
    viewer = _member(django_user_model, "viewer", public, "viewer")
    listing = _client(viewer).get("/s/").content.decode()
    assert public.name in listing and SECRET not in listing
    page = _client(viewer).get(f"/s/{public.slug}/").content.decode()
    assert f"/s/{public.slug}/" in page and f"/s/{private.slug}/" not in page


def test_global_roles_are_roles_of_the_default_study_only(studies, analyst, alice):
    private, _ = studies
    default = default_study_id()
    from studies.models import Study
    slug = Study.objects.get(pk=default).slug
    assert _client(analyst).get(f"/s/{slug}/").status_code == 200
    assert _client(analyst).get(f"/s/{private.slug}/").status_code == 404
    assert _client(alice).get(f"/s/{slug}/").status_code == 404  # annotators are no members
