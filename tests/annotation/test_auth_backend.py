"""The role-aware auth backend: one query per request for the user and their roles, the same
answers as Django's backend, and role changes visible on the very next request."""
import pytest
from django.contrib.auth.models import Group

from annotation.core.auth_backend import RoleAwareBackend
from annotation.core.permissions import user_roles

pytestmark = pytest.mark.django_db


def test_user_and_roles_load_in_one_query(alice, analyst, admin, django_assert_num_queries):
    backend = RoleAwareBackend()
    for user, roles in ((alice, {"annotator"}), (analyst, {"analyst"}),
                        (admin, {"admin", "analyst"})):
        with django_assert_num_queries(1):
            loaded = backend.get_user(str(user.pk))  # sessions store the id as text
            assert user_roles(loaded) == roles
        assert loaded.pk == user.pk and loaded.username == user.username


def test_revoked_role_and_deactivated_account_take_effect_at_once(alice, alice_client):
    assert alice_client.get("/work/").status_code == 200
    alice.groups.remove(Group.objects.get(name="annotator"))
    assert alice_client.get("/work/").status_code == 403
    alice.is_active = False
    alice.save()
    assert RoleAwareBackend().get_user(alice.pk) is None


def test_unknown_or_tampered_ids_are_anonymous(alice):
    backend = RoleAwareBackend()
    assert backend.get_user(alice.pk + 1000) is None
    assert backend.get_user("1 OR 1=1") is None
