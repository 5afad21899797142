"""Loads the signed-in user together with their roles, in one precompiled query.

Every request resolves ``request.user`` and nearly every view then checks its roles: with
Django's backend that is two queries, and on the annotators' hot path building them through
the ORM costs more CPU than running them. This backend reads the user row and both role
memberships (EXISTS subqueries, portable SQL) in one statement written once. Roles are still
read from the database on every request, so revoking one takes effect at once.
"""
from functools import cache

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend

from annotation.core.permissions import ANALYST, ANNOTATOR, ROLE_FLAGS
from annotation.core.sql import ModelColumns, fetch_one


@cache
def _user_with_roles_query():
    user_model = get_user_model()
    user = ModelColumns(user_model, "u")
    link = user_model.groups.through._meta.db_table
    group = user_model.groups.field.related_model._meta.db_table
    member = (f"EXISTS (SELECT 1 FROM {link} l JOIN {group} g ON g.id = l.group_id "
              "WHERE l.user_id = u.id AND g.name = %s)")
    return user, (f"SELECT {user.sql()}, {member}, {member} FROM {user.table()}"
                  f" WHERE u.{user_model._meta.pk.column} = %s")


class RoleAwareBackend(ModelBackend):
    def get_user(self, user_id):
        user_model = get_user_model()
        try:
            user_id = user_model._meta.pk.to_python(user_id)
        except Exception:  # a tampered session: same outcome as an unknown id
            return None
        columns, sql = _user_with_roles_query()
        row = fetch_one(sql, [ANNOTATOR, ANALYST, user_id])
        if row is None:
            return None
        user, i = columns.load(row)
        setattr(user, ROLE_FLAGS[ANNOTATOR], bool(row[i]))
        setattr(user, ROLE_FLAGS[ANALYST], bool(row[i + 1]))
        return user if self.user_can_authenticate(user) else None
