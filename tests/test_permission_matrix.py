"""Permission matrix: every URL pattern × every role gets exactly the access it should.

The URL list is walked from the live resolver, so a new URL without an entry in ``EXPECTED``
(or a matching admin rule) fails ``test_every_url_has_an_explicit_permission``. Parameters
resolve to real objects (a batch, a task, an assignment owned by the annotator, a report and
its file, a metric run, a judge run, an eval model). POST-only endpoints are probed with a
POST only where the request is refused or writes nothing; for allowed roles they are probed
with GET, which must answer 405.
"""
import re
from decimal import Decimal

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import timezone

# other_study: the owner of another study, holding no deployment-wide role: sees and changes
# nothing of the default study (whose pages and API every URL below serves).
ROLES = ("anonymous", "annotator", "other_annotator", "analyst", "admin", "other_study")

# Status classes. "ok" = 2xx; "redirect" = a 302 that is not to a login page; "login" = 302 to
# /accounts/login/; "admin_login" = 302 to /admin/login/; ints are exact status codes.
# A value ("GET", 405) means: probe with GET instead of the entry's method, expect 405.
GET405 = ("GET", 405)
ANALYST_PAGE = dict(anonymous="login", annotator=403, other_annotator=403, analyst="ok",
                    admin="ok", other_study=403)
ADMIN_PAGE = dict(anonymous="login", annotator=403, other_annotator=403, analyst=403, admin="ok",
                  other_study=403)
ANNOTATOR_PAGE = dict(anonymous="login", annotator="ok", other_annotator="ok", analyst=403,
                      admin=403, other_study=403)
ANALYST_API = dict(anonymous=401, annotator=403, other_annotator=403, analyst="ok", admin="ok",
                   other_study=403)
ADMIN_API = dict(anonymous=401, annotator=403, other_annotator=403, analyst=403, admin="ok",
                 other_study=403)
ANNOTATOR_API = dict(anonymous=401, annotator="ok", other_annotator="ok", analyst=403,
                     admin=403, other_study=403)
# A study's pages and API (the default study's here; the global analyst role is its analyst):
# anyone who is no member gets the 404 of a missing study, never a 403 naming it.
STUDY_PAGE = dict(anonymous="login", annotator=404, other_annotator=404, analyst="ok",
                  admin="ok", other_study=404)
STUDY_BOARD = dict(STUDY_PAGE, anonymous=404)  # a private study's board: no sign-in offered
# A study's submitter pages and API: the analyst holds no submitter role (staff do).
STUDY_SUBMIT_PAGE = dict(STUDY_PAGE, analyst=404)
STUDY_SUBMIT_API = dict(STUDY_BOARD, analyst=404)
# A study's batches, settings and run controls: its owners (and staff); the default study's
# analyst is no owner, so to them it is the 404 of any page they may not open.
STUDY_MANAGE = dict(STUDY_PAGE, analyst=404)
# The same under /api/studies/<slug>/: the anonymous get the 404 too (no sign-in page).
STUDY_ANALYZE_API = STUDY_BOARD
STUDY_MANAGE_API = dict(STUDY_ANALYZE_API, analyst=404)
PUBLIC = {role: "ok" for role in ROLES}
SIGNED_IN = dict({role: "ok" for role in ROLES}, anonymous="login")
# Submitter pages and API: none of the roles above holds the submitter role (its own access,
# and another submitter's 404, are in tests/judging/submissions).
SUBMITTER_PAGE = dict({role: 403 for role in ROLES}, anonymous="login")
SUBMITTER_API = dict({role: 403 for role in ROLES}, anonymous=401)
ANY_UUID = "00000000-0000-4000-8000-000000000000"


def _post_only(allowed: dict) -> dict:
    """A POST-only endpoint: refused roles are probed by POST, allowed ones by GET → 405."""
    return {role: GET405 if want == "ok" else want for role, want in allowed.items()}


# URL name → (HTTP method, {path parameter: fixture object key}, {role: expected}).
EXPECTED = {
    # Accounts, schema, media.
    "login": ("GET", {}, PUBLIC),
    "logout": ("POST", {}, {role: "redirect" for role in ROLES}),  # → logged_out; own client
    "logged_out": ("GET", {}, PUBLIC),
    # Password reset by e-mail is open (an unknown link answers "no longer works"); changing
    # one's password and one's profile need only being signed in.
    "password_reset": ("GET", {}, PUBLIC),
    "password_reset_done": ("GET", {}, PUBLIC),
    "password_reset_confirm": ("GET", {"uidb64": "MQ", "token": "set-password"}, PUBLIC),
    "password_reset_complete": ("GET", {}, PUBLIC),
    "password_change": ("GET", {}, SIGNED_IN),
    "password_change_done": ("GET", {}, SIGNED_IN),
    "profile": ("GET", {}, SIGNED_IN),
    "profile_token": ("POST", {}, _post_only(SIGNED_IN)),
    # People and access (admins).
    "people:list": ("GET", {}, ADMIN_PAGE),
    "people:create": ("GET", {}, ADMIN_PAGE),
    "people:person": ("GET", {"username": "username"}, ADMIN_PAGE),
    "people:roles": ("POST", {"username": "username"}, _post_only(ADMIN_PAGE)),
    "people:token": ("POST", {"username": "username"}, _post_only(ADMIN_PAGE)),
    "people:token_revoke": ("POST", {"username": "username"}, _post_only(ADMIN_PAGE)),
    "api-schema": ("GET", {}, dict(ANALYST_API, annotator="ok", other_annotator="ok",
                                      other_study="ok")),
    "api-docs": ("GET", {}, dict(ANALYST_API, annotator="ok", other_annotator="ok",
                                      other_study="ok")),
    "api-redoc": ("GET", {}, dict(ANALYST_API, annotator="ok", other_annotator="ok",
                                      other_study="ok")),
    "<media>": ("GET", {"path": "media_path"}, PUBLIC),  # deliberately public, see config.urls
    # DRF router roots: default permission (staff only).
    "api-root": ("GET", {}, ADMIN_API),
    # Evaluation API.
    "eval-leaderboard": ("GET", {}, ANALYST_API),
    "eval-judges": ("GET", {}, ANALYST_API),
    "eval-majorities": ("GET", {}, ANALYST_API),
    "eval-model-list": ("GET", {}, ANALYST_API),
    "eval-model-detail": ("GET", {"name": "model_name"}, ANALYST_API),
    "eval-model-set-reference": ("POST", {"name": "model_name"}, _post_only(ADMIN_API)),
    "eval-score-leaderboard": ("GET", {}, ANALYST_API),
    "eval-submissions": ("GET", {}, SUBMITTER_API),
    # The benchmark kit: submitters (tests/judging/submissions/test_kit.py) and analysts.
    "eval-kit": ("GET", {}, ANALYST_API),
    "eval-submission": ("GET", {"submission_uuid": ANY_UUID}, SUBMITTER_API),
    # A study's boards in the API.
    "study-api-root": ("GET", {"study_slug": "study"}, STUDY_BOARD),
    "study-leaderboard": ("GET", {"study_slug": "study"}, STUDY_BOARD),
    "study-score-leaderboard": ("GET", {"study_slug": "study"}, STUDY_BOARD),
    "study-submissions": ("GET", {"study_slug": "study"}, STUDY_SUBMIT_API),
    "study-kit": ("GET", {"study_slug": "study"}, STUDY_SUBMIT_API),
    # Without ?judge= a reader gets the 400 naming the parameter; others the study's 404.
    "study-judge-powered": ("GET", {"study_slug": "study"},
                            dict(STUDY_BOARD, analyst=400, admin=400)),
    # A study's batches (owners), judge runs (analysts; owners cancel and resume), reports
    # and metric runs (analysts) in the API.
    "study-batch-list": ("GET", {"study_slug": "study"}, STUDY_MANAGE_API),
    "study-batch-detail": ("GET", {"study_slug": "study", "uuid": "batch"}, STUDY_MANAGE_API),
    "study-batch-progress": ("GET", {"study_slug": "study", "uuid": "batch"}, STUDY_MANAGE_API),
    "study-batch-results": ("GET", {"study_slug": "study", "uuid": "batch", "fmt": "csv"},
                            STUDY_MANAGE_API),
    "study-batch-set-status": ("POST", {"study_slug": "study", "uuid": "batch",
                                        "new_status": "paused"}, _post_only(STUDY_MANAGE_API)),
    "study-judge-run-list": ("GET", {"study_slug": "study"}, STUDY_ANALYZE_API),
    "study-judge-run-detail": ("GET", {"study_slug": "study", "uuid": "judge_run"},
                               STUDY_ANALYZE_API),
    "study-judge-run-progress": ("GET", {"study_slug": "study", "uuid": "judge_run"},
                                 STUDY_ANALYZE_API),
    "study-judge-run-cancel": ("POST", {"study_slug": "study", "uuid": "judge_run"},
                               _post_only(STUDY_MANAGE_API)),
    "study-judge-run-resume": ("POST", {"study_slug": "study", "uuid": "judge_run"},
                               _post_only(STUDY_MANAGE_API)),
    "study-report-list": ("GET", {"study_slug": "study"}, STUDY_ANALYZE_API),
    "study-report-detail": ("GET", {"study_slug": "study", "uuid": "report"}, STUDY_ANALYZE_API),
    "study-report-json": ("GET", {"study_slug": "study", "uuid": "report"}, STUDY_ANALYZE_API),
    "study-metric-run-list": ("GET", {"study_slug": "study"}, STUDY_ANALYZE_API),
    "study-metric-run-detail": ("GET", {"study_slug": "study", "uuid": "metric_run"},
                                STUDY_ANALYZE_API),
    # Agreement API (analysts may start reports and metric runs; probed with GET only).
    "agreement-report-list": ("GET", {}, ANALYST_API),
    "agreement-report-detail": ("GET", {"uuid": "report"}, ANALYST_API),
    "agreement-report-json": ("GET", {"uuid": "report"}, ANALYST_API),
    "agreement-metric-run-list": ("GET", {}, ANALYST_API),
    "agreement-metric-run-detail": ("GET", {"uuid": "metric_run"}, ANALYST_API),
    # Judge API: analysts read, admins manage.
    "judge-run-list": ("GET", {}, ANALYST_API),
    "judge-run-detail": ("GET", {"uuid": "judge_run"}, ANALYST_API),
    "judge-run-progress": ("GET", {"uuid": "judge_run"}, ANALYST_API),
    "judge-run-cancel": ("POST", {"uuid": "judge_run"}, _post_only(ADMIN_API)),
    "judge-run-resume": ("POST", {"uuid": "judge_run"}, _post_only(ADMIN_API)),
    # Engine API: staff only, except the worker's own assignments.
    "batch-list": ("GET", {}, ADMIN_API),
    "batch-detail": ("GET", {"uuid": "batch"}, ADMIN_API),
    "batch-progress": ("GET", {"uuid": "batch"}, ADMIN_API),
    "batch-results": ("GET", {"uuid": "batch", "fmt": "csv"}, ADMIN_API),
    "batch-set-status": ("POST", {"uuid": "batch", "new_status": "paused"},
                         _post_only(ADMIN_API)),
    "task-list": ("GET", {}, ADMIN_API),
    "task-detail": ("GET", {"uuid": "task"}, ADMIN_API),
    "worker-list": ("GET", {}, ADMIN_API),
    "worker-detail": ("GET", {"uuid": "worker"}, ADMIN_API),
    "assignment-list": ("GET", {}, ADMIN_API),
    "assignment-detail": ("GET", {"uuid": "assignment"}, ADMIN_API),
    "my-assignment-list": ("GET", {}, ANNOTATOR_API),
    "my-assignment-claim": ("POST", {"batch_uuid": "batch"}, _post_only(ANNOTATOR_API)),
    # Only its own worker sees an assignment; the other annotator gets 404.
    "my-assignment-detail": ("GET", {"uuid": "assignment"},
                             dict(ANNOTATOR_API, other_annotator=404)),
    "my-assignment-submit": ("POST", {"uuid": "assignment"},
                             dict(ANNOTATOR_API, annotator=GET405, other_annotator=404)),
    # Evaluation pages.
    "judging:leaderboard": ("GET", {}, ANALYST_PAGE),
    "judging:leaderboard_ratings_png": ("GET", {}, ANALYST_PAGE),
    "judging:leaderboard_scores_download": ("GET", {"fmt": "csv"}, ANALYST_PAGE),
    "judging:leaderboard_categories_png": ("GET", {}, ANALYST_PAGE),
    "judging:leaderboard_download": ("GET", {"fmt": "csv"}, ANALYST_PAGE),
    "judging:judges:run_list": ("GET", {}, ANALYST_PAGE),
    "judging:judges:leaderboards": ("GET", {}, ANALYST_PAGE),
    "judging:judges:run_new": ("GET", {}, ANALYST_PAGE),  # analysts start runs (and the API)
    "judging:judges:run_detail": ("GET", {"run_uuid": "judge_run"}, ANALYST_PAGE),
    "judging:judges:run_cancel": ("POST", {"run_uuid": "judge_run"}, _post_only(ADMIN_PAGE)),
    "judging:judges:run_resume": ("POST", {"run_uuid": "judge_run"}, _post_only(ADMIN_PAGE)),
    # Public submission of new models (submitters).
    "judging:submit": ("GET", {}, SUBMITTER_PAGE),
    "judging:submission": ("GET", {"submission_uuid": ANY_UUID}, SUBMITTER_PAGE),
    "judging:kit": ("GET", {}, ANALYST_PAGE),  # and submitters (tests/judging/submissions)
    "judging:my_board": ("GET", {}, SUBMITTER_PAGE),
    "judging:submission_status": ("GET", {"submission_uuid": ANY_UUID}, SUBMITTER_PAGE),
    # A study's pages; the list shows each user only their own studies.
    "studies:list": ("GET", {}, dict({role: "ok" for role in ROLES}, anonymous="login")),
    "studies:home": ("GET", {"study_slug": "study"}, STUDY_PAGE),
    "studies:board": ("GET", {"study_slug": "study"}, STUDY_BOARD),
    "studies:submit": ("GET", {"study_slug": "study"}, STUDY_SUBMIT_PAGE),
    "studies:submit_kit": ("GET", {"study_slug": "study"}, STUDY_SUBMIT_PAGE),
    "studies:submit_board": ("GET", {"study_slug": "study"}, STUDY_SUBMIT_PAGE),
    "studies:submission": ("GET", {"study_slug": "study", "submission_uuid": ANY_UUID},
                           dict(STUDY_SUBMIT_PAGE, admin=404)),
    "studies:submission_status": ("GET", {"study_slug": "study", "submission_uuid": ANY_UUID},
                                  dict(STUDY_SUBMIT_PAGE, admin=404)),
    "studies:new": ("GET", {}, ADMIN_PAGE),  # staff create studies
    "studies:settings": ("GET", {"study_slug": "study"}, STUDY_MANAGE),
    "studies:dataset": ("GET", {"study_slug": "study"}, STUDY_PAGE),
    "studies:dataset_download": ("GET", {"study_slug": "study", "export_name": "dataset_export"},
                                 STUDY_PAGE),
    # The pages below also serve the default study at their old URLs (further down), with the
    # study's role instead of the deployment's.
    "study_console:batches": ("GET", {"study_slug": "study"}, STUDY_MANAGE),
    "study_console:upload": ("GET", {"study_slug": "study"}, STUDY_MANAGE),
    "study_console:upload_sample": ("GET", {"study_slug": "study"},
                                    dict(STUDY_MANAGE, admin=404)),  # no HIT type asked
    "study_console:batch": ("GET", {"study_slug": "study", "batch_uuid": "batch"}, STUDY_MANAGE),
    "study_console:status": ("POST", {"study_slug": "study", "batch_uuid": "batch"},
                             _post_only(STUDY_MANAGE)),
    "study_console:images": ("POST", {"study_slug": "study", "batch_uuid": "batch"},
                             _post_only(STUDY_MANAGE)),
    "study_console:preview": ("GET", {"study_slug": "study", "batch_uuid": "batch",
                                      "position": "1"}, STUDY_MANAGE),
    "study_console:launch": ("GET", {"study_slug": "study", "batch_uuid": "batch"},
                             STUDY_MANAGE),
    "study_console:review": ("GET", {"study_slug": "study", "batch_uuid": "batch"},
                             STUDY_MANAGE),
    "study_console:block": ("GET", {"study_slug": "study", "batch_uuid": "batch"},
                            dict(STUDY_MANAGE, admin=404)),  # no ?worker
    "study_console:results": ("GET", {"study_slug": "study", "batch_uuid": "batch",
                                      "fmt": "csv"}, STUDY_MANAGE),
    "study_console:money": ("GET", {"study_slug": "study", "batch_uuid": "batch"}, STUDY_MANAGE),
    "study_console:money_approve": ("POST", {"study_slug": "study", "batch_uuid": "batch"},
                                    _post_only(STUDY_MANAGE)),
    "study_console:money_bonus": ("POST", {"study_slug": "study", "batch_uuid": "batch"},
                                  _post_only(STUDY_MANAGE)),
    "study_console:money_bonus_retry": ("POST", {"study_slug": "study", "batch_uuid": "batch",
                                                 "bonus_uuid": ANY_UUID},
                                        _post_only(dict(STUDY_MANAGE, admin=404))),
    "study_console:money_payout": ("POST", {"study_slug": "study", "batch_uuid": "batch"},
                                   _post_only(STUDY_MANAGE)),
    "study_console:money_export": ("GET", {"study_slug": "study", "batch_uuid": "batch"},
                                   STUDY_MANAGE),
    "study_judges:run_list": ("GET", {"study_slug": "study"}, STUDY_PAGE),
    "study_judges:run_new": ("GET", {"study_slug": "study"}, STUDY_PAGE),
    "study_judges:run_detail": ("GET", {"study_slug": "study", "run_uuid": "judge_run"},
                                STUDY_PAGE),
    "study_judges:run_cancel": ("POST", {"study_slug": "study", "run_uuid": "judge_run"},
                                _post_only(STUDY_MANAGE)),
    "study_judges:run_resume": ("POST", {"study_slug": "study", "run_uuid": "judge_run"},
                                _post_only(STUDY_MANAGE)),
    "study_reports:report_list": ("GET", {"study_slug": "study"}, STUDY_PAGE),
    "study_reports:report_start": ("POST", {"study_slug": "study"}, _post_only(STUDY_PAGE)),
    "study_reports:report_detail": ("GET", {"study_slug": "study", "report_uuid": "report"},
                                    STUDY_PAGE),
    "study_reports:report_file": ("GET", {"study_slug": "study", "report_uuid": "report",
                                          "name": "report_file"}, STUDY_PAGE),
    "study_reports:report_status": ("GET", {"study_slug": "study", "report_uuid": "report"},
                                    STUDY_PAGE),
    "study_reports:report_restart": ("POST", {"study_slug": "study", "report_uuid": "report"},
                                     _post_only(STUDY_PAGE)),
    "study_reports:report_delete": ("GET", {"study_slug": "study", "report_uuid": "report"},
                                    STUDY_PAGE),
    "study_review:list": ("GET", {"study_slug": "study"}, STUDY_PAGE),
    "study_review:item": ("GET", {"study_slug": "study", "comparison_uuid": "comparison"},
                          STUDY_PAGE),
    "study_review:adjudicate": ("POST", {"study_slug": "study",
                                         "comparison_uuid": "comparison"},
                                _post_only(STUDY_PAGE)),
    "study_review:more_votes": ("POST", {"study_slug": "study",
                                         "comparison_uuid": "comparison"},
                                _post_only(STUDY_PAGE)),
    "studies:plan": ("GET", {"study_slug": "study"}, STUDY_PAGE),
    # Turning a plan into a batch is the owner's (staff hold it; the analyst does not).
    "studies:plan_batch": ("POST", {"study_slug": "study"},
                           dict(STUDY_PAGE, analyst=404, admin="redirect")),
    # Agreement reports.
    "agreement:report_list": ("GET", {}, ANALYST_PAGE),
    "agreement:report_start": ("POST", {}, _post_only(ANALYST_PAGE)),
    "agreement:report_detail": ("GET", {"report_uuid": "report"}, ANALYST_PAGE),
    "agreement:report_file": ("GET", {"report_uuid": "report", "name": "report_file"},
                              ANALYST_PAGE),
    "agreement:report_status": ("GET", {"report_uuid": "report"}, ANALYST_PAGE),
    "agreement:report_restart": ("POST", {"report_uuid": "report"}, _post_only(ANALYST_PAGE)),
    "agreement:report_delete": ("GET", {"report_uuid": "report"}, ANALYST_PAGE),
    # Disagreement review (analysts).
    "review:list": ("GET", {}, ANALYST_PAGE),
    "review:item": ("GET", {"comparison_uuid": "comparison"}, ANALYST_PAGE),
    "review:adjudicate": ("POST", {"comparison_uuid": "comparison"}, _post_only(ANALYST_PAGE)),
    "review:more_votes": ("POST", {"comparison_uuid": "comparison"}, _post_only(ANALYST_PAGE)),
    # Provider pipeline (admins).
    "pipeline:dashboard": ("GET", {}, ADMIN_PAGE),
    "pipeline:push": ("POST", {}, _post_only(ADMIN_PAGE)),
    "pipeline:report": ("GET", {}, ADMIN_PAGE),
    "pipeline:report_json": ("GET", {}, ADMIN_PAGE),
    "pipeline:report_csv": ("GET", {}, ADMIN_PAGE),
    # The admin's batch pages in the product (annotation.console).
    "console:batches": ("GET", {}, ADMIN_PAGE),
    "console:upload": ("GET", {}, ADMIN_PAGE),
    "console:upload_sample": ("GET", {}, dict(ADMIN_PAGE, admin=404)),  # no HIT type asked
    "console:batch": ("GET", {"batch_uuid": "batch"}, ADMIN_PAGE),
    "console:status": ("POST", {"batch_uuid": "batch"}, _post_only(ADMIN_PAGE)),
    "console:images": ("POST", {"batch_uuid": "batch"}, _post_only(ADMIN_PAGE)),
    "console:preview": ("GET", {"batch_uuid": "batch", "position": "1"}, ADMIN_PAGE),
    "console:launch": ("GET", {"batch_uuid": "batch"}, ADMIN_PAGE),
    "console:review": ("GET", {"batch_uuid": "batch"}, ADMIN_PAGE),
    "console:block": ("GET", {"batch_uuid": "batch"}, dict(ADMIN_PAGE, admin=404)),  # no ?worker
    "console:results": ("GET", {"batch_uuid": "batch", "fmt": "csv"}, ADMIN_PAGE),
    "console:money": ("GET", {"batch_uuid": "batch"}, ADMIN_PAGE),
    "console:money_approve": ("POST", {"batch_uuid": "batch"}, _post_only(ADMIN_PAGE)),
    "console:money_bonus": ("POST", {"batch_uuid": "batch"}, _post_only(ADMIN_PAGE)),
    "console:money_bonus_retry": ("POST", {"batch_uuid": "batch", "bonus_uuid": ANY_UUID},
                                  _post_only(ADMIN_PAGE)),
    "console:money_payout": ("POST", {"batch_uuid": "batch"}, _post_only(ADMIN_PAGE)),
    "console:money_export": ("GET", {"batch_uuid": "batch"}, ADMIN_PAGE),
    # "/" sends each signed-in role to its own home, anonymous visitors to sign in.
    # (a member of a study without a deployment-wide role: to the list of their studies)
    "annotation:home": ("GET", {}, dict({role: "redirect" for role in ROLES}, anonymous="login")),
    "favicon": ("GET", {}, {role: 301 for role in ROLES}),  # → the static SVG
    "homes:analyst": ("GET", {}, ANALYST_PAGE),
    "homes:dashboard": ("GET", {}, ADMIN_PAGE),
    # Annotator pages.
    "annotation:available": ("GET", {}, ANNOTATOR_PAGE),
    "annotation:my_work": ("GET", {}, ANNOTATOR_PAGE),
    # Claims (or resumes) the next task and redirects to it.
    "annotation:batch_next": ("GET", {"batch_uuid": "batch"},
                              dict(ANNOTATOR_PAGE, annotator="redirect",
                                   other_annotator="redirect")),
    # Public view guarded by ownership: everyone but the owner gets 404.
    "annotation:assignment": ("GET", {"assignment_uuid": "assignment"},
                              dict(anonymous=404, annotator="ok", other_annotator=404,
                                   analyst=404, admin=404, other_study=404)),
    "annotation:assignment_skip": ("POST", {"assignment_uuid": "assignment"},
                                   dict(anonymous=404, annotator=GET405, other_annotator=404,
                                        analyst=404, admin=404, other_study=404)),
    "annotation:assignment_problem": ("POST", {"assignment_uuid": "assignment"},
                                      dict(anonymous=404, annotator=GET405, other_annotator=404,
                                           analyst=404, admin=404, other_study=404)),
    # Marketplace entry points: public, their own checks apply. Without marketplace
    # parameters, Prolific arrival and completion are refused; the fixture's task is in a local
    # batch, which the MTurk page does not know (404, even for a preview).
    "annotation:mturk_task": ("GET", {"task_uuid": "task"}, {r: 404 for r in ROLES}),
    "annotation:prolific_batch": ("GET", {"batch_uuid": "batch"}, {r: 400 for r in ROLES}),
    "annotation:prolific_done": ("POST", {"batch_uuid": "batch"}, {r: 400 for r in ROLES}),
    # Prolific's hooks: public, authenticated by their signature; an unsigned POST is refused.
    "annotation:prolific_hook": ("POST", {}, {r: 403 for r in ROLES}),
}

# Admin URLs are covered by a rule: the login page is open, the rest is staff only and everyone
# else is sent to the admin login.
ADMIN_RULE = dict(anonymous="admin_login", annotator="admin_login",
                  other_annotator="admin_login", analyst="admin_login", admin="staff_ok",
                  other_study="admin_login")
# The admin is read-only for engine/provider records: staff get 403 on these "add" pages.
ADMIN_NO_ADD = dict(ADMIN_RULE, admin=403)
ADMIN_SPECIAL = {
    "admin:login": ("GET", dict(PUBLIC, admin="redirect")),  # staff go on to the index
    "admin:autocomplete": ("GET", ADMIN_NO_ADD),  # 403 without a valid field reference
    **{f"admin:{model}_add": ("GET", ADMIN_NO_ADD) for model in (
        "judging_judgerun", "judging_judgecall", "annotation_providersubmission",
        "annotation_providerhit", "annotation_provideraction", "annotation_marketplacebatch",
        "annotation_bonus", "annotation_assignment",
        "agreement_report", "agreement_metricrun",  # jobs are started by their services
        "judging_submission", "annotation_webhookdelivery",  # made by submitters / events
        "judging_judgment",  # written by their one service only
        # django-axes' sign-in records: written by failed sign-ins only (delete = unlock)
        "axes_accessattempt", "axes_accesslog", "axes_accessfailurelog")},
    # Django 5 logs out by POST only; non-staff are sent to the admin index (then its login).
    "admin:logout": ("GET", dict({r: "redirect" for r in ROLES}, admin=405)),
}

# Cases whose access is known to be wrong (xfail strict); empty: fix the view, never the table.
KNOWN_WRONG: dict[tuple[str, str], str] = {}


def _walk(patterns, prefix="", namespace=""):
    for p in patterns:
        if isinstance(p, URLResolver):
            ns = ":".join(filter(None, [namespace, p.namespace]))
            yield from _walk(p.url_patterns, prefix + str(p.pattern), ns)
        elif isinstance(p, URLPattern):
            name = ":".join(filter(None, [namespace, p.name])) if p.name else ""
            yield prefix + str(p.pattern), name


def all_patterns():
    """(route, key) for every URL pattern of the project; key is the table's entry name."""
    out = []
    for route, name in _walk(get_resolver().url_patterns):
        key = name or ("<media>" if route.startswith("^media/") else f"<unnamed {route}>")
        out.append((route, key))
    return out


def _build_path(route: str, values: dict) -> str:
    path = re.sub(r"\(\?P<(\w+)>[^)]*\)", lambda m: str(values[m.group(1)]), route)
    path = re.sub(r"<(?:(\w+):)?(\w+)>",  # DRF's suffix converter includes the dot
                  lambda m: ("." if m.group(1) == "drf_format_suffix" else "")
                  + str(values[m.group(2)]), path)
    path = path.replace("^", "").replace("$", "").replace("/?", "").replace("\\.", ".")
    return "/" + path


def _cases():
    cases = []
    for route, key in all_patterns():
        if route.startswith("admin/"):
            continue  # test_admin_access
        if key in EXPECTED:
            method, _, table = EXPECTED[key]
        else:
            continue  # reported by test_every_url_has_an_explicit_permission
        for role in ROLES:
            marks = []
            if (route, role) in KNOWN_WRONG:
                marks = [pytest.mark.xfail(strict=True, reason=KNOWN_WRONG[(route, role)])]
            cases.append(pytest.param(route, key, method, role, table[role], marks=marks,
                                      id=f"{route}|{role}"))
    return cases


def test_every_url_has_an_explicit_permission():
    missing = [(route, key) for route, key in all_patterns()
               if not route.startswith("admin/") and key not in EXPECTED]
    assert not missing, f"URLs without an entry in EXPECTED: {missing}"
    stale = set(EXPECTED) - {key for _, key in all_patterns()}
    assert not stale, f"EXPECTED entries for URLs that no longer exist: {stale}"
    assert any(route.startswith("admin/") for route, _ in all_patterns())


@pytest.fixture
def world(db, alice, bob, analyst, admin, django_user_model):
    """Real objects for every URL parameter; the assignment is leased to the annotator."""
    from agreement.models import MetricRun, Report, ReportFile
    from annotation.engine.services.claims import task_claim_next
    from annotation.engine.services.workers import worker_for_user
    from judging.judges.models import Judge, JudgeRun
    from judging.models import EvalModel
    from tests.factories import make_batch

    batch = make_batch(2, n=2)
    assignment = task_claim_next(batch=batch, worker=worker_for_user(alice))
    worker_for_user(bob)
    now = timezone.now()
    report = Report.objects.create(title="r", created_at=now, status=Report.Status.DONE,
                                   data={})
    ReportFile.objects.create(report=report, name="table.csv", content=b"a,b\n",
                              content_type="text/csv")
    judge = Judge.objects.create(name="perm-judge", kind="pairwise",
                                 base_url="http://127.0.0.1:9/v1", model_name="stand-in",
                                 price_in_per_1k=Decimal("0"), price_out_per_1k=Decimal("0"))
    media_path = default_storage.save("perm/probe.txt", ContentFile(b"probe"))
    from studies.models import Study, StudyMembership
    from studies.selectors import study_default
    elsewhere = Study.objects.create(name="Elsewhere", slug="elsewhere")
    other_study = django_user_model.objects.create_user(username="owen_other_study")
    StudyMembership.objects.create(user=other_study, study=elsewhere, role="owner")
    values = {
        "batch": batch.uuid, "task": assignment.task.uuid, "assignment": assignment.uuid,
        "worker": assignment.worker.uuid, "report": report.uuid, "report_file": "table.csv",
        "dataset_export": "judgments.csv",
        "metric_run": MetricRun.objects.create(metrics=["bleu"], created_at=now).uuid,
        "judge_run": JudgeRun.objects.create(judge=judge, scope="comparisons",
                                             created_at=now).uuid,
        "model_name": EvalModel.objects.create(name="permmodel").name,
        "media_path": media_path, "format": "json", "comparison": _comparison().uuid,
        "study": study_default().slug,
        "username": bob.username,
    }
    users = {"annotator": alice, "other_annotator": bob, "analyst": analyst, "admin": admin,
             "other_study": other_study}
    yield values, users
    default_storage.delete(media_path)


def _comparison():
    from judging.models import Comparison
    from tests.judging import builders

    inst = builders.instance(urls=[])
    ms = builders.models("perm-a", "perm-b")
    return Comparison.objects.create(instance=inst,
                                     response_a=builders.respond(inst, ms["perm-a"]),
                                     response_b=builders.respond(inst, ms["perm-b"]))


def _values_for(route, key, values):
    if route.startswith("admin/"):
        # Admin object URLs get an id that does not exist: staff are redirected to the index.
        return {"object_id": "999999", "id": "999999", "pk": "999999", "content_type_id": "1", "app_label": "annotation",
                "url": "nowhere/", "format": "json", **values}
    params = EXPECTED[key][1] if key in EXPECTED else {}
    out = {"format": "json"}
    for param, source in params.items():
        out[param] = values.get(source, source)
    return out


@pytest.mark.parametrize("route,key,method,role,expected", _cases())
def test_access(world, route, key, method, role, expected):
    values, users = world
    _check(route, key, method, role, expected, values, users)


@pytest.mark.parametrize("route,key", [pytest.param(r, k, id=r) for r, k in all_patterns()
                                       if r.startswith("admin/")])
def test_admin_access(db, route, key, alice, bob, analyst, admin, django_user_model):
    """Admin URLs by rule (one test per URL, all roles, to keep ~190 patterns fast)."""
    other_study = django_user_model.objects.create_user(username="owen_other_study")
    users = {"annotator": alice, "other_annotator": bob, "analyst": analyst, "admin": admin,
             "other_study": other_study}
    method, table = ADMIN_SPECIAL.get(key, ("GET", ADMIN_RULE))
    for role in ROLES:
        _check(route, key, method, role, table[role], {}, users)


def _check(route, key, method, role, expected, values, users):
    path = _build_path(route, _values_for(route, key, values))
    client = Client()
    if role != "anonymous":
        client.force_login(users[role])
    if isinstance(expected, tuple):
        method, expected = expected
    response = client.get(path) if method == "GET" else client.post(path)
    status, location = response.status_code, response.headers.get("Location", "")
    got = f"{role}: {path} → {status} {location}".strip()
    if expected == "ok":
        assert 200 <= status < 300, got
    elif expected == "staff_ok":
        assert status < 500 and status != 403 and "/login/" not in location, got
    elif expected == "redirect":
        assert status == 302 and "/login/" not in location, got
    elif expected == "login":
        assert status == 302 and location.startswith("/accounts/login/"), got
    elif expected == "admin_login":
        assert status == 302 and location.startswith("/admin/login/"), got
    else:
        assert status == expected, got
