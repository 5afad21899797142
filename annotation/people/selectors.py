"""Reads of the people pages: users with their roles and whether they hold an API token."""
from django.contrib.auth import get_user_model
from django.db.models import Exists, OuterRef, Q
from rest_framework.authtoken.models import Token

from .services import GROUP_ROLES


def users_with_roles(query: str = ""):
    """Users (newest first), annotated with one boolean per role group and ``has_token``: one
    query for the page, however many rows."""
    user_model = get_user_model()
    rows = user_model.objects.annotate(
        has_token=Exists(Token.objects.filter(user=OuterRef("pk"))),
        **{f"role_{name}": Exists(user_model.groups.through.objects.filter(
            user=OuterRef("pk"), group__name=name)) for name in GROUP_ROLES})
    if query:
        rows = rows.filter(Q(username__icontains=query) | Q(email__icontains=query))
    return rows.order_by("-date_joined", "-pk")


def roles_of(user) -> list[str]:
    """The role names of a row from ``users_with_roles`` (admin last)."""
    roles = [name for name in GROUP_ROLES if getattr(user, f"role_{name}", False)]
    return roles + (["admin"] if user.is_staff else [])
