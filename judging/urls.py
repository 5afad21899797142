from django.urls import include, path

app_name = "judging"

urlpatterns = [
    path("", include("judging.rating_urls")),
    path("judges/", include("judging.judges.urls")),
    path("submit/", include("judging.submissions.urls")),
]
