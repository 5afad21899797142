"""People and access through HTTP: the admins' user pages (roles, new users, API tokens), one's
own profile and token, password reset by e-mail, the logged-out page."""
import re

import pytest
from django.contrib.auth.models import Group
from django.core import mail
from django.test import Client
from rest_framework.authtoken.models import Token

pytestmark = pytest.mark.django_db


def _client(user=None) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def _groups(user) -> set[str]:
    return set(user.groups.values_list("name", flat=True))


@pytest.mark.parametrize("who", ["alice", "analyst"])
def test_non_admins_get_403_on_people_pages(request, who, bob):
    client = _client(request.getfixturevalue(who))
    assert client.get("/people/").status_code == 403
    assert client.get(f"/people/user/{bob.username}/").status_code == 403
    assert client.post(f"/people/user/{bob.username}/roles/",
                       {"roles": ["admin"]}).status_code == 403
    assert client.post(f"/people/user/{bob.username}/token/").status_code == 403
    bob.refresh_from_db()
    assert not bob.is_staff and not Token.objects.filter(user=bob).exists()


def test_people_list_shows_each_users_roles(admin, alice, analyst):
    page = _client(admin).get("/people/").content.decode()
    alice_row = re.search(r'<tr id="person-alice">(.*?)</tr>', page, re.S).group(1)
    analyst_row = re.search(r'<tr id="person-ann_analyst">(.*?)</tr>', page, re.S).group(1)
    assert "Annotator" in alice_row and "Analyst" not in alice_row
    assert "Analyst" in analyst_row and "Annotator" not in analyst_row
    found = _client(admin).get("/people/", {"q": "ALI"}).content.decode()
    assert "person-alice" in found and "person-ann_analyst" not in found


def test_admin_changes_roles(admin, alice):
    response = _client(admin).post("/people/user/alice/roles/",
                                   {"roles": ["analyst", "submitter", "admin"]})
    assert response.status_code == 302
    alice.refresh_from_db()
    assert _groups(alice) == {"analyst", "submitter"} and alice.is_staff
    _client(admin).post("/people/user/alice/roles/", {"roles": ["annotator"]})
    alice.refresh_from_db()
    assert _groups(alice) == {"annotator"} and not alice.is_staff
    # She is an annotator again at once: the analyst pages refuse her.
    assert _client(alice).get("/reports/").status_code == 403


def test_unknown_role_and_own_admin_role_are_refused(admin, alice):
    client = _client(admin)
    client.post("/people/user/alice/roles/", {"roles": ["annotator", "superhero"]})
    alice.refresh_from_db()
    assert _groups(alice) == {"annotator"}
    page = client.post(f"/people/user/{admin.username}/roles/", {"roles": ["analyst"]},
                       follow=True).content.decode()
    assert "cannot remove your own admin role" in page
    admin.refresh_from_db()
    assert admin.is_staff and not _groups(admin)


def test_admin_creates_a_user_who_can_sign_in(admin, django_user_model):
    response = _client(admin).post("/people/new/", {
        "username": "carol", "email": "carol@example.org", "password": "a-long-Passphrase-7",
        "roles": ["annotator"]})
    assert response.status_code == 302 and response["Location"] == "/people/user/carol/"
    carol = django_user_model.objects.get(username="carol")
    assert _groups(carol) == {"annotator"} and not carol.is_staff
    signed_in = Client().post("/accounts/login/", {"username": "carol",
                                                   "password": "a-long-Passphrase-7"})
    assert signed_in.status_code == 302 and "/login/" not in signed_in["Location"]


@pytest.mark.parametrize("form,error", [
    ({"username": "alice", "email": "a@example.org"}, "is taken"),
    ({"username": "dave", "password": "123"}, "too short"),
    ({"username": "dave"}, "Give an e-mail or a password"),
    ({"username": "da ve", "email": "d@example.org"}, "Enter a valid username"),
])
def test_bad_new_user_is_refused_and_writes_nothing(admin, alice, django_user_model, form,
                                                     error):
    before = django_user_model.objects.count()
    response = _client(admin).post("/people/new/", form)
    assert response.status_code == 200 and error in response.content.decode()
    assert django_user_model.objects.count() == before
    assert not Group.objects.filter(user__username="dave").exists()


def test_admin_creates_rotates_and_revokes_a_token(admin, bob):
    client = _client(admin)
    page = client.post("/people/user/bob/token/", follow=True).content.decode()
    first = Token.objects.get(user=bob).key
    assert first in page  # shown once, to hand over
    client.post("/people/user/bob/token/")
    second = Token.objects.get(user=bob).key
    assert second != first
    api = Client()
    assert api.get("/api/my/assignments/", HTTP_AUTHORIZATION=f"Token {first}").status_code == 401
    assert api.get("/api/my/assignments/", HTTP_AUTHORIZATION=f"Token {second}").status_code == 200
    client.post("/people/user/bob/token/revoke/")
    assert not Token.objects.filter(user=bob).exists()
    assert api.get("/api/my/assignments/", HTTP_AUTHORIZATION=f"Token {second}").status_code == 401


def test_profile_shows_ones_own_token(alice, bob):
    bobs = Token.objects.create(user=bob)
    client = _client(alice)
    assert "You have no API token" in client.get("/accounts/profile/").content.decode()
    client.post("/accounts/profile/token/")
    own = Token.objects.get(user=alice)
    page = client.get("/accounts/profile/").content.decode()
    assert f'<code id="token-key">{own.key}</code>' in page
    assert bobs.key not in page
    assert 'href="/accounts/password/"' in page
    client.post("/accounts/profile/token/")
    assert Token.objects.get(user=alice).key != own.key
    assert Token.objects.get(user=bob).key == bobs.key  # someone else's is untouched


def test_password_reset_by_email_sets_a_new_password(alice):
    alice.email = "alice@example.org"
    alice.save()
    client = Client()
    assert 'href="/accounts/password-reset/"' in client.get("/accounts/login/").content.decode()
    response = client.post("/accounts/password-reset/", {"email": "alice@example.org"})
    assert response.status_code == 302
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["alice@example.org"]
    link = re.search(r"https?://[^/\s]+(/accounts/password-reset/\S+/)", mail.outbox[0].body)[1]
    form_page = client.get(link, follow=True)
    assert b"Choose a new password" in form_page.content
    set_url = form_page.redirect_chain[-1][0]
    done = client.post(set_url, {"new_password1": "Fresh-Passphrase-42",
                                 "new_password2": "Fresh-Passphrase-42"})
    assert done.status_code == 302 and done["Location"] == "/accounts/password-reset/done/"
    alice.refresh_from_db()
    assert alice.check_password("Fresh-Passphrase-42")
    # The link works once.
    assert b"This link no longer works" in Client().get(link, follow=True).content


def test_password_reset_for_an_unknown_address_sends_nothing(alice):
    response = Client().post("/accounts/password-reset/", {"email": "nobody@example.org"})
    assert response.status_code == 302 and not mail.outbox


def test_logout_shows_the_logged_out_page(alice):
    client = _client(alice)
    page = client.post("/accounts/logout/", follow=True)
    assert b"You have been logged out" in page.content
    assert client.get("/work/mine/").status_code == 302  # signed out for real
