from django.urls import path

from annotation.engine import views as work
from annotation.providers import views as external

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
    path("ext/mturk/task/<uuid:task_uuid>/", external.mturk_task, name="mturk_task"),
]
urlpatterns += [  # Prolific sends participants to a batch, not a task; they return here
    path("ext/prolific/batch/<uuid:batch_uuid>/", external.prolific_batch, name="prolific_batch"),
    path("ext/prolific/batch/<uuid:batch_uuid>/done/mturk/externalSubmit",
         external.prolific_done, name="prolific_done"),
    path("ext/prolific/hooks/", external.prolific_hook, name="prolific_hook"),
]
