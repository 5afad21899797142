from django.urls import path

from . import views

urlpatterns = [
    path("", views.submit, name="submit"),
    path("kit.zip", views.kit_download, name="kit"),
    path("board/", views.my_board, name="my_board"),
    path("<uuid:submission_uuid>/", views.submission_status, name="submission"),
    path("<uuid:submission_uuid>/status.json", views.submission_status_json,
         name="submission_status"),
]
