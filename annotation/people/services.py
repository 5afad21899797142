"""Every write on people and access: creating a user, setting their roles, issuing and revoking
their API token. Pages call these and nothing else writes users, groups or tokens."""
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.db import transaction
from rest_framework.authtoken.models import Token

from annotation.core.permissions import ANALYST, ANNOTATOR, SUBMITTER

ADMIN = "admin"
# The roles an admin can give, in the order pages list them; "admin" is the staff flag.
ROLES = (ANNOTATOR, ANALYST, SUBMITTER, ADMIN)
ROLE_LABELS = {ANNOTATOR: "Annotator", ANALYST: "Analyst", SUBMITTER: "Submitter",
               ADMIN: "Admin (staff)"}
GROUP_ROLES = (ANNOTATOR, ANALYST, SUBMITTER)


def _check_roles(roles) -> set[str]:
    unknown = set(roles) - set(ROLES)
    if unknown:
        raise ValidationError(f"Unknown role(s): {', '.join(sorted(unknown))}.")
    return set(roles)


@transaction.atomic
def user_set_roles(user, roles, *, by) -> None:
    """Give ``user`` exactly ``roles``. An admin cannot take the admin role from themselves
    (that would lock the last admin out of these pages as easily as anyone)."""
    roles = _check_roles(roles)
    if user.pk == by.pk and ADMIN not in roles and user.is_staff:
        raise ValidationError("You cannot remove your own admin role.")
    groups = {g.name: g for g in Group.objects.filter(name__in=GROUP_ROLES)}
    for name in GROUP_ROLES:
        group = groups.get(name) or Group.objects.get_or_create(name=name)[0]
        if name in roles:
            user.groups.add(group)
        else:
            user.groups.remove(group)
    if user.is_staff != (ADMIN in roles):
        user.is_staff = ADMIN in roles
        user.save(update_fields=["is_staff"])


@transaction.atomic
def user_create(*, username: str, email: str, password: str, roles, by):
    """A new active user with ``roles``; the password is checked by the project's validators
    (the form does that before calling; an empty password leaves the account without one, to be
    set through the reset e-mail)."""
    user_model = get_user_model()
    if user_model.objects.filter(username__iexact=username).exists():
        raise ValidationError(f"The username “{username}” is taken.")
    roles = _check_roles(roles)
    user = user_model.objects.create_user(username=username, email=email,
                                          password=password or None)
    user_set_roles(user, roles, by=by)
    return user


@transaction.atomic
def user_token_issue(user) -> Token:
    """A new API token for ``user``; an old one stops working at once (rotation)."""
    Token.objects.filter(user=user).delete()
    return Token.objects.create(user=user)


def user_token_revoke(user) -> bool:
    """Remove ``user``'s API token; False if they had none."""
    deleted, _ = Token.objects.filter(user=user).delete()
    return bool(deleted)
