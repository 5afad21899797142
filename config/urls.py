"""Top-level URL map; each app owns its own URL module."""
from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.http import Http404
from django.templatetags.static import static
from django.urls import include, path, re_path
from django.utils.functional import lazy
from django.views.generic import RedirectView, TemplateView
from django.views.static import serve as serve_file
from drf_spectacular.views import SpectacularAPIView

from agreement.study_urls import study_pages
from annotation.core.permissions import public, signed_in_required
from annotation.people import views as people_views
from config.api_docs import RedocPage, SwaggerPage

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/logged-out/", public(TemplateView.as_view(
        template_name="registration/logged_out.html")), name="logged_out"),
    # Password reset by e-mail (Django's views, our templates) and change when signed in.
    path("accounts/password-reset/", public(auth_views.PasswordResetView.as_view()),
         name="password_reset"),
    path("accounts/password-reset/sent/", public(auth_views.PasswordResetDoneView.as_view()),
         name="password_reset_done"),
    path("accounts/password-reset/<uidb64>/<token>/",
         public(auth_views.PasswordResetConfirmView.as_view()), name="password_reset_confirm"),
    path("accounts/password-reset/done/",
         public(auth_views.PasswordResetCompleteView.as_view()), name="password_reset_complete"),
    path("accounts/password/", signed_in_required(auth_views.PasswordChangeView.as_view()),
         name="password_change"),
    path("accounts/password/done/",
         signed_in_required(auth_views.PasswordChangeDoneView.as_view()),
         name="password_change_done"),
    path("accounts/profile/", people_views.profile, name="profile"),
    path("accounts/profile/token/", people_views.profile_token, name="profile_token"),
    path("people/", include("annotation.people.urls")),  # admins: users, roles, API tokens
    # api_version fixed: the schema view would otherwise take ?version= into its filename header
    path("api/schema/", SpectacularAPIView.as_view(
        api_version=settings.SPECTACULAR_SETTINGS["VERSION"]), name="api-schema"),
    # Its docs, served offline (drf-spectacular-sidecar), permitted like the schema itself.
    path("api/docs/", SwaggerPage.as_view(), name="api-docs"),
    path("api/redoc/", RedocPage.as_view(), name="api-redoc"),
    path("api/eval/", include("judging.api_urls")),
    path("api/agreement/", include("agreement.api_urls")),
    path("api/judges/", include("judging.judges.api_urls")),
    path("api/studies/<slug:study_slug>/", include("judging.study_api_urls")),
    path("api/studies/<slug:study_slug>/", include("annotation.study_api_urls")),
    path("api/studies/<slug:study_slug>/", include("agreement.study_api_urls")),
    path("api/", include("annotation.api_urls")),
    path("eval/", include("judging.urls")),
    path("reports/", include("agreement.urls")),
    path("review/", include("agreement.review.urls")),
    path("study/", include("agreement.home_urls")),
    path("s/", include("agreement.study_urls")),  # one study's pages (studies.access)
    path("s/", include(study_pages)),  # its batches, judge runs, reports, review
    path("favicon.ico", public(RedirectView.as_view(url=lazy(static, str)("favicon.svg"),
                                                    permanent=True)), name="favicon"),
    path("pipeline/", include("annotation.pipeline.urls")),
    path("batches/", include("annotation.console.urls")),  # the admin's batch pages
    path("", include("annotation.urls")),
]

if settings.STORAGES["default"]["BACKEND"].endswith("FileSystemStorage"):
    # Local-storage mode: benchmark images must reach workers (who may not be logged in, e.g.
    # inside a marketplace iframe), so media is public. With S3 the bucket serves them instead.
    def serve_media(request, path):
        """Django's file view; a path the OS cannot even look up (a name over 255 bytes) is
        no file either: a 404, not a 500."""
        try:
            return serve_file(request, path, document_root=settings.MEDIA_ROOT)
        except OSError as exc:
            raise Http404("No such file") from exc

    urlpatterns.append(re_path(r"^media/(?P<path>.*)$", serve_media))
