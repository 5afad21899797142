"""Who may do what in a study, as django-rules predicates (no tables, no per-object rows).

A role is a ``StudyMembership``; staff hold every role in every study. Roles nest: an owner
is also an analyst and a submitter, and every member is a viewer. The deployment-wide role
groups (``analyst``, ``submitter``) that predate studies still count, as the same role in the
*default* study only (a fallback, not a copy: granting the group in the admin keeps working,
and a study added later starts with no members but its owner).
"""
import rules

from .models import Study, StudyMembership

Role = StudyMembership.Role
# The global groups (annotation.core.permissions) read as default-study roles.
_GROUP_ROLES = {"analyst": Role.ANALYST, "submitter": Role.SUBMITTER}
_IMPLIES = {Role.OWNER: {Role.OWNER, Role.ANALYST, Role.SUBMITTER, Role.VIEWER},
            Role.ANALYST: {Role.ANALYST, Role.VIEWER},
            Role.SUBMITTER: {Role.SUBMITTER, Role.VIEWER},
            Role.VIEWER: {Role.VIEWER}}


def study_roles(user, study: Study) -> set[str]:
    """The roles ``user`` holds in ``study`` (implied ones included), once per request."""
    if not user.is_authenticated:
        return set()
    cache = user.__dict__.setdefault("_study_roles", {})
    if study.pk not in cache:
        held = set(StudyMembership.objects.filter(user=user, study=study)
                   .values_list("role", flat=True))
        if study.is_default:
            groups = user.groups.filter(name__in=_GROUP_ROLES).values_list("name", flat=True)
            held |= {_GROUP_ROLES[name] for name in groups}
        cache[study.pk] = set().union(*(_IMPLIES[Role(r)] for r in held)) if held else set()
    return cache[study.pk]


def _holds(role: str):
    @rules.predicate(name=f"holds_{role}")
    def predicate(user, study) -> bool:
        return study is not None and role in study_roles(user, study)
    return predicate


is_staff = rules.is_staff
is_owner = _holds(Role.OWNER)
is_analyst = _holds(Role.ANALYST)
is_submitter = _holds(Role.SUBMITTER)
is_member = _holds(Role.VIEWER)


@rules.predicate
def is_public(user, study) -> bool:
    return study is not None and study.is_public


rules.add_rule("studies.view", is_staff | is_member)
rules.add_rule("studies.view_board", is_public | is_staff | is_member)
rules.add_rule("studies.analyze", is_staff | is_analyst)
rules.add_rule("studies.submit", is_staff | is_submitter)
rules.add_rule("studies.manage", is_staff | is_owner)
