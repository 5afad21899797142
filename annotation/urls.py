"""The app's pages: the engine's work pages, then every registered marketplace's own pages
(arrival, completion, hooks) under ``ext/<name>/``, mounted from the registry so that no
marketplace is named here (``Provider.urls``)."""
from django.urls import include, path

from annotation.core import marketplaces
from annotation.engine import views as work

app_name = "annotation"

urlpatterns = [
    path("", work.home, name="home"),
    path("work/", work.available_work, name="available"),
    path("work/mine/", work.my_work, name="my_work"),
    path("work/batch/<uuid:batch_uuid>/next/", work.batch_next, name="batch_next"),
    path("work/a/<uuid:assignment_uuid>/", work.assignment_page, name="assignment"),
    path("work/a/<uuid:assignment_uuid>/skip/", work.assignment_skip, name="assignment_skip"),
    path("work/a/<uuid:assignment_uuid>/problem/", work.assignment_problem,
         name="assignment_problem"),
]
urlpatterns += [path(f"ext/{provider.name}/", include(provider.urls))
                for provider in marketplaces.registered() if provider.urls]
