"""People and access (mounted at /people/): admins only."""
from django.urls import path

from . import views

app_name = "people"

urlpatterns = [
    path("", views.people_list, name="list"),
    path("new/", views.person_create, name="create"),
    path("user/<str:username>/", views.person_detail, name="person"),
    path("user/<str:username>/roles/", views.person_roles, name="roles"),
    path("user/<str:username>/token/", views.person_token, name="token"),
    path("user/<str:username>/token/revoke/", views.person_token_revoke, name="token_revoke"),
]
