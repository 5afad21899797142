"""People and access pages: the admins' user list, a user's roles and API token, a new user;
everyone's own profile with their token. Views parse, authorize and render; each write is one
service (annotation.people.services)."""
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from rest_framework.authtoken.models import Token

from annotation.core.permissions import admin_required, signed_in_required, user_roles

from .forms import RolesForm, UserCreateForm
from .selectors import roles_of, users_with_roles
from .services import (
    ROLE_LABELS,
    user_create,
    user_set_roles,
    user_token_issue,
    user_token_revoke,
)

LIST_PAGE = 50
QUERY_MAX = 150


def _user(username):
    if "\x00" in username:  # no user has one, and PostgreSQL refuses it in a query
        raise Http404("No such user")
    return get_object_or_404(get_user_model(), username=username)


@admin_required
@require_GET
def people_list(request):
    query = request.GET.get("q", "").strip()[:QUERY_MAX].replace("\x00", "")
    page = Paginator(users_with_roles(query), LIST_PAGE).get_page(request.GET.get("page"))
    rows = [(user, [ROLE_LABELS[r] for r in roles_of(user)]) for user in page.object_list]
    return render(request, "annotation/people/list.html",
                  {"page": page, "rows": rows, "query": query})


@admin_required
@require_http_methods(["GET", "POST"])
def person_create(request):
    form = UserCreateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            user = user_create(username=data["username"], email=data["email"],
                               password=data["password"], roles=data["roles"], by=request.user)
        except ValidationError as exc:
            form.add_error("username", exc)
        else:
            messages.success(request, f"User “{user.username}” created.")
            return redirect("people:person", user.username)
    return render(request, "annotation/people/create.html", {"form": form})


@admin_required
@require_GET
def person_detail(request, username):
    user = _user(username)
    roles = sorted(user_roles(user) & set(ROLE_LABELS))
    return render(request, "annotation/people/detail.html", {
        "person": user, "form": RolesForm(initial={"roles": roles}),
        "token": Token.objects.filter(user=user).first()})


@admin_required
@require_POST
def person_roles(request, username):
    user = _user(username)
    form = RolesForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose roles from the list.")
        return redirect("people:person", user.username)
    try:
        user_set_roles(user, form.cleaned_data["roles"], by=request.user)
    except ValidationError as exc:
        messages.error(request, "; ".join(exc.messages))
    else:
        messages.success(request, f"Roles of “{user.username}” saved.")
    return redirect("people:person", user.username)


@admin_required
@require_POST
def person_token(request, username):
    """Create (or rotate) the user's API token; its key is shown once, in the message."""
    user = _user(username)
    token = user_token_issue(user)
    messages.success(request, f"New API token for “{user.username}”: {token.key} — give it to "
                              "them now; any previous token stopped working.")
    return redirect("people:person", user.username)


@admin_required
@require_POST
def person_token_revoke(request, username):
    user = _user(username)
    if user_token_revoke(user):
        messages.success(request, f"The API token of “{user.username}” is revoked.")
    else:
        messages.info(request, f"“{user.username}” had no API token.")
    return redirect("people:person", user.username)


@signed_in_required
@require_GET
def profile(request):
    return render(request, "annotation/people/profile.html", {
        "token": Token.objects.filter(user=request.user).first(),
        "role_names": [ROLE_LABELS[r]
                       for r in sorted(user_roles(request.user) & set(ROLE_LABELS))]})


@signed_in_required
@require_POST
def profile_token(request):
    """Create or rotate one's own API token."""
    user_token_issue(request.user)
    messages.success(request, "Your new API token is below; the previous one stopped working.")
    return redirect("profile")
