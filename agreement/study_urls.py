"""Pages of one study, under /s/ (namespace studies): its home, its public board, the staff's
"new study" page and the owner's settings; and, each in its own namespace, the batch, judge
run, report and review pages that also serve the default study at their old URLs (the links
between them stay in the study: ``studies.links``)."""
from django.urls import include, path

from agreement import urls as report_urls
from agreement.review import urls as review_urls
from annotation.console import urls as console_urls
from judging.judges import urls as judge_urls
from judging.submissions import views as submissions
from judging.views.study_board import study_board
from judging.views.vote_plan import vote_plan_batch, vote_plan_page
from studies.links import STUDY_NAMESPACES

from . import homes, study_dataset, study_settings

app_name = "studies"

# The judges' own boards are the deployment's (every judge's verdicts): not a study's page.
_judge_pages = [p for p in judge_urls.urlpatterns if p.name != "leaderboards"]

urlpatterns = [
    path("", homes.study_list, name="list"),
    path("new/", study_settings.study_new, name="new"),
    path("<slug:study_slug>/", homes.study_home, name="home"),
    path("<slug:study_slug>/board/", study_board, name="board"),
    path("<slug:study_slug>/submit/", submissions.study_submit, name="submit"),
    path("<slug:study_slug>/submit/kit.zip", submissions.study_kit_download, name="submit_kit"),
    path("<slug:study_slug>/submit/board/", submissions.study_my_board, name="submit_board"),
    path("<slug:study_slug>/submit/<uuid:submission_uuid>/", submissions.study_submission_status,
         name="submission"),
    path("<slug:study_slug>/submit/<uuid:submission_uuid>/status.json",
         submissions.study_submission_status_json, name="submission_status"),
    path("<slug:study_slug>/settings/", study_settings.study_edit, name="settings"),
    path("<slug:study_slug>/plan/", vote_plan_page, name="plan"),
    path("<slug:study_slug>/plan/batch/", vote_plan_batch, name="plan_batch"),
    path("<slug:study_slug>/dataset/", include(study_dataset.urlpatterns)),
]

# Outside the "studies" namespace: mounted from config.urls (``study_pages``), each in the
# namespace ``studies.links`` maps the old one to.
study_pages = [
    path(f"<slug:study_slug>/{prefix}/", include((patterns, STUDY_NAMESPACES[old])))
    for prefix, patterns, old in (("batches", console_urls.urlpatterns, "console"),
                                  ("judges", _judge_pages, "judging:judges"),
                                  ("reports", report_urls.urlpatterns, "agreement"),
                                  ("review", review_urls.urlpatterns, "review"))]
