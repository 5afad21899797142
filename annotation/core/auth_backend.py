"""Loads the signed-in user together with their roles, in one precompiled query.

Every request resolves ``request.user`` and nearly every view then checks its roles: with
Django's backend that is two queries, and on the annotators' hot path building them through
the ORM costs more CPU than running them. This backend reads the user row and its role
memberships (one EXISTS subquery per role, portable SQL) in one statement written once
(annotation.core.sql). Roles are still read from the database on every request, so revoking
one takes effect at once.
"""
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend

from annotation.core.permissions import ROLE_FLAGS
from annotation.core.sql import user_with_roles


class RoleAwareBackend(ModelBackend):
    def get_user(self, user_id):
        user_model = get_user_model()
        try:
            user_id = user_model._meta.pk.to_python(user_id)
        except Exception:  # a tampered session: same outcome as an unknown id
            return None
        found = user_with_roles(user_id, tuple(ROLE_FLAGS))
        if found is None:
            return None
        user, members = found
        for attr, member in zip(ROLE_FLAGS.values(), members, strict=True):
            setattr(user, attr, member)
        return user if self.user_can_authenticate(user) else None
