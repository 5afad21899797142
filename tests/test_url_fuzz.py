"""Fuzz every URL's query, form and path parameters, as every role: no input may cause a 5xx.

The URL list is walked from the live resolver (as in test_permission_matrix, whose fixture
gives real objects for every path parameter), so a new page, admin view, download or API
endpoint is fuzzed without being listed here. Roles: the matrix's five and a staff user with
no model permission. For each URL:

1. a baseline request per role with valid values finds, by running the code, which query,
   form and file parameter names the view reads (``read_names``), and whether the role gets
   in; a form page's own fields (admin add/change forms, the custom admin views, the login)
   are read from its HTML and posted back;
2. one role that gets in (preferably one the baseline worked for) is sent every fixed hostile
   value (``HOSTILE``: NUL, CR/LF, lone surrogates, non-UTF-8 bytes, 10k characters,
   whitespace, numbers beyond 64 bits and Python's digit limit, negatives, ``../``) in every
   parameter at once, then ``SWEEP`` one parameter at a time with the others valid, then
   ``HYPOTHESIS_EXAMPLES`` Hypothesis-generated queries and forms (derandomized); the other
   roles that get in are sent ``FEW`` all at once; refused roles one request holding all of
   it (their refusal must come before any parsing);
3. free-text path parameters (str/path converters, DRF lookups, media, the admin's object
   ids) get hostile segments; DRF endpoints taking POST get JSON bodies nested 10,000 deep and
   other hostile documents, and the browsable API (``?format=api``) hostile queries;
4. Django's generated admin pages (the same code for every model) get ``FEW`` values as the
   two staff roles; our own admin views (upload, import, launch) get the full treatment.

Every answer must be below 500 and nothing may be logged at ERROR (except Django's
``django.security`` reports, which come with a 400 by design). Each request runs in a
savepoint that is rolled back, so all see the same world and side effects never pile up; no
outbound connection is allowed (a fuzzed launch must never reach a marketplace). About 8,500
requests; ``-s`` prints each URL's swept parameters and the slowest URLs.

The plain tests at the end pin each server error the fuzzer found, one request each.
"""
from __future__ import annotations

import re
import time
from datetime import timedelta
from urllib.parse import quote_from_bytes

import pytest
from django.test import Client
from django.urls import resolve, reverse
from django.utils import timezone
from hypothesis import HealthCheck, Phase, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from tests import test_permission_matrix as matrix
from tests.support.api_fuzz import loopback_only
from tests.support.url_fuzz import (
    FEW,
    HOSTILE,
    IN_PATH,
    KITCHEN_SINK,
    SWEEP,
    Prober,
    as_bytes,
    encode_pairs,
    form_values,
    hostile_values,
    multipart,
    nested_json,
    quiet_4xx_logs,
    read_names,
)
from tests.test_permission_matrix import world  # noqa: F401  (the fixture)

pytestmark = pytest.mark.django_db

ROLES = (*matrix.ROLES, "staff")  # staff: is_staff without any model permission
HYPOTHESIS_EXAMPLES = 6  # per URL, method and reaching role, on top of the fixed list

# Valid values for every parameter name some view reads (a baseline request sends them all,
# so each view runs down its deepest path and reads everything it can). Unknown names get "x".
BASELINE: dict[str, str] = {
    # leaderboards, API paging
    "judge": "human", "split": "all", "exclude_blocked": "1", "rounds": "10",
    "limit": "5", "offset": "0", "source": "visitbench",
    # marketplace arrival (the MTurk batch of the fixture publishes HIT "3FUZZ1")
    "assignmentId": "ASSIGNFUZZ1", "workerId": "WORKERFUZZ1", "hitId": "3FUZZ1",
    "turkSubmitTo": "https://workersandbox.mturk.com",
    "PROLIFIC_PID": "PIDFUZZ1", "STUDY_ID": "studyfuzz", "SESSION_ID": "SESSIONFUZZ2",
    # forms: report, pipeline push, batch upload, benchmark import, launch, answers, login
    "seed": "0", "bootstrap_rounds": "0", "metrics": "bleu4", "title": "fuzz",
    "stage": "captioning", "hit_type": "pairwise_ab", "assignments_per_task": "1",
    "reward": "0.10", "lease_seconds": "60", "min_seconds": "0", "format": "visitbench",
    "confirm": "on", "choice": "A", "username": "nobody", "password": "wrong",
    # disagreement review: filters, adjudication note, extra votes
    "kind": "any", "state": "all", "pair": "1-2", "turn": "overall", "note": "fuzz", "extra": "2",
}
FILES = {"file": ("rows.csv", b"instruction,response_a,response_b\nq,a,b\n")}
# Per URL name (or kind): a different valid value where the same name means something else.
BASELINE_FOR = {
    "annotation:prolific_done": {"assignmentId": "SESSIONFUZZ1"},  # a saved Prolific session
    "api": {"format": "json"},  # DRF's format override: ?format=visitbench would be a 404
}
ADMIN_CHANGELIST = ("q", "o", "p", "all", "e", "_to_field", "_popup")
# Read by DRF and Django's admin on every page (the changelist's flags too): in the
# all-at-once requests only. The changelist's search, ordering and page are swept one by one.
FRAMEWORK_NAMES = {"format", "_to_field", "_popup", "_changelist_filters", "all", "e"}


@pytest.fixture
def fuzz_world(world, django_user_model, monkeypatch):  # noqa: F811  (pytest's fixture)
    """The permission matrix's objects, a staff user with no model permission, and batches
    published on MTurk and Prolific (with a saved Prolific session) for the arrival pages.

    Every fuzzed request runs inside the test's transaction, where the marketplace services
    refuse to call out (a RuntimeError by design); a real request has no transaction
    (no ATOMIC_REQUESTS), so the guard is lifted here and ``loopback_only`` refuses the call
    itself: a launch answers as it would with the marketplace unreachable."""
    from annotation.engine.services.claims import task_claim_next
    from annotation.engine.services.submissions import assignment_submit
    from annotation.engine.services.workers import worker_for_external
    from annotation.models import Assignment
    from annotation.providers.services import bonuses, launch, review, workers
    from tests.factories import make_batch, publish_on_mturk, publish_on_prolific

    for module in (bonuses, launch, review, workers):  # each holds the guard it calls
        monkeypatch.setattr(module, "require_outside_transaction", lambda: None)
    values, users = world
    users = {**users, "staff": django_user_model.objects.create_user(
        username="sam_staff", password="pw-sam_staff", is_staff=True)}
    mturk = make_batch(1, n=3)
    publish_on_mturk(mturk, prefix="3FUZZ")
    prolific = make_batch(2, n=3)
    publish_on_prolific(prolific, study="studyfuzz")
    worker = worker_for_external("prolific", "PIDFUZZ0")
    saved = task_claim_next(batch=prolific, worker=worker)
    Assignment.objects.filter(pk=saved.pk).update(provider_assignment_id="SESSIONFUZZ1")
    saved.refresh_from_db()
    assignment_submit(assignment=saved, data={"choice": "A"},
                      now=saved.claimed_at + timedelta(seconds=5))
    overrides = {"annotation:mturk_task": {"task_uuid": mturk.tasks.first().uuid},
                 "annotation:prolific_batch": {"batch_uuid": prolific.uuid},
                 "annotation:prolific_done": {"batch_uuid": prolific.uuid}}
    return values, users, overrides


def _admin_object_ids() -> dict[str, str]:
    """``admin:<app>_<model>_`` → a real object's pk (the newest), for change/delete pages."""
    from django.contrib import admin

    ids = {}
    for model in admin.site._registry:
        obj = model._default_manager.order_by("-pk").first()
        if obj is not None:
            ids[f"admin:{model._meta.app_label}_{model._meta.model_name}_"] = str(obj.pk)
    return ids


def _targets(values, overrides):
    """(URL name, path with real objects, kind, {free-text path parameter: path with a
    placeholder there}) for every URL pattern."""
    admin_ids = _admin_object_ids()
    targets = []
    for route, key in matrix.all_patterns():
        params = matrix._values_for(route, key, values)
        if route.startswith("admin/"):
            own = next((pk for prefix, pk in admin_ids.items() if key.startswith(prefix)),
                       None)
            if own is not None:
                params.update(object_id=own, pk=own, id=own)
        params.update(overrides.get(key, {}))
        path = matrix._build_path(route, params)
        view = resolve(path).func
        kind = ("admin" if route.startswith("admin/")
                else "api" if hasattr(view, "cls") else "page")
        names = set(FREE_TEXT.findall(route)) | {
            name for converter, name in CONVERTER.findall(FREE_TEXT.sub("(", route))
            if converter in ("", "str", "path")}
        free = {name: matrix._build_path(route, {**params, name: PLACEHOLDER})
                for name in sorted(names - {"format"})}
        targets.append((key, path, kind, free))
    return targets


# Path parameters any text reaches: regex groups (DRF lookups, media, the admin catch-all)
# and str/path converters. uuid/int/slug converters refuse everything else before a view runs.
FREE_TEXT = re.compile(r"\(\?P<(\w+)>")
CONVERTER = re.compile(r"<(?:(\w+):)?(\w+)>")
PLACEHOLDER = "__FUZZ__"


def _clients(users):
    clients = {"anonymous": Client(raise_request_exception=False)}
    for role, user in users.items():
        clients[role] = Client(raise_request_exception=False)
        clients[role].force_login(user)
    return clients


def _refused(response) -> bool:
    location = response.headers.get("Location", "")
    return (response.status_code in (401, 403)
            or (response.status_code == 302 and "/login/" in location))


def _pairs(names, baseline, hostile_name=None, value=b""):
    """Every name at its valid value, except ``hostile_name`` (all names if ``"*"``)."""
    return [(n, value if hostile_name in (n, "*") else as_bytes(baseline.get(n, "x")))
            for n in sorted(names)]


# Django's own admin views, the same code for every model: fuzzed with FEW values (a
# changelist's parameters one at a time), not the full sweep our own views get.
GENERATED_ADMIN = ("_changelist", "_add", "_change", "_delete", "_history")
ADMIN_FORMS = ("_changelist", "_add", "_change")  # the rest read no parameter of their own
ADMIN_SITE_VIEWS = ("admin:index", "admin:login", "admin:logout", "admin:password_change",
                    "admin:password_change_done", "admin:jsi18n", "admin:view_on_site",
                    "admin:autocomplete", "admin:app_list")


def _generated_admin(key: str, kind: str) -> bool:
    return kind == "admin" and (key.endswith(GENERATED_ADMIN) or key in ADMIN_SITE_VIEWS
                                or not key.startswith("admin:"))  # the catch-all redirect


class _Fuzz:
    """Fuzz one URL: baselines, the fixed hostile list, Hypothesis, JSON bodies."""

    def __init__(self, prober: Prober, key: str, path: str, kind: str, free: dict[str, str]):
        self.p, self.key, self.path, self.kind, self.free = prober, key, path, kind, free
        self.baseline = {**BASELINE, **BASELINE_FOR.get(key, BASELINE_FOR.get(kind, {}))}
        self.form_baseline: dict[str, dict[str, str]] = {}  # role → valid form values
        self.generated_admin = _generated_admin(key, kind)

    def send_form(self, role, files, pairs, label, query=""):
        if files:
            body, content_type = multipart(pairs, {n: FILES.get(n, ("f.txt", b"x"))
                                                   for n in files})
        else:
            body, content_type = encode_pairs(pairs).encode(), None
        return self.p.send(role, "POST", self.path, query=query, body=body,
                           content_type=content_type, label=label, where=self.key)

    def get(self, role, names, hostile, value, label, valid=None):
        return self.p.send(role, "GET", self.path, label=f"GET {hostile}={label}",
                           where=self.key, query=encode_pairs(
                               _pairs(names, valid or self.baseline, hostile, value)))

    def post(self, role, post, hostile, value, label):
        fields, files = post
        return self.send_form(role, files, _pairs(fields, self.form_baseline.get(
            role, self.baseline), hostile, value), f"POST {hostile}={label}")

    def discover(self, role):
        """Baseline GET (and POST where the view takes one) with valid values: the names read,
        and whether the role is refused."""
        query = "" if self.kind == "admin" else encode_pairs(_pairs(BASELINE, self.baseline))
        with read_names() as seen:
            page = self.p.send(role, "GET", self.path, query=query, label="baseline",
                               where=self.key)
        names = set(seen.query)
        if self.kind == "admin" and self.key.endswith("_changelist"):
            names |= set(ADMIN_CHANGELIST)
        form, post = _own_form(page), None
        refused = _refused(page)
        if page.status_code == 405 or form is not None or (
                self.kind in ("admin", "api") and not refused):
            if form is not None:  # the page's own values win: a valid change form
                self.form_baseline[role] = {**self.baseline, **dict(form["values"])}
            valid = self.form_baseline.get(role, self.baseline)
            with read_names() as seen:
                answer = self.send_form(role, set(FILES) | _files(form), _pairs(valid, valid),
                                        "baseline")
            if answer.status_code != 405:
                post = (seen.query | {n for n, _ in _values(form)}, seen.files | _files(form))
            refused = _refused(answer) and (page.status_code == 405 or refused)
        worked = page.status_code < 400 or (post is not None and answer.status_code < 400)
        return names, post, refused, page.headers.get("Content-Type", ""), worked

    def run(self):
        # Django's generated admin pages send every non-staff role to the admin login before
        # anything is read (test_permission_matrix checks each one): fuzzed as the two staff
        # roles, the superuser and the staff user without model permissions.
        self.roles = ("admin", "staff") if self.generated_admin else ROLES
        found = {role: self.discover(role) for role in self.roles}
        reaching = [role for role in self.roles if not found[role][2]]
        # One role sweeps parameter by parameter; not on rendered images (the plots read the
        # same parameters as the leaderboard page, which is swept; each costs a render).
        # Preferably a role the baseline worked for (an owner, not someone getting a 404).
        candidates = [r for r in reaching if not found[r][3].startswith("image/")]
        sweeper = next((r for r in candidates if found[r][4]), None) or next(
            iter(candidates), None)
        if sweeper is not None:
            names, post = found[sweeper][:2]
            print(f"{self.key} swept as {sweeper}: query {sorted(names)}"
                  + (f", form {sorted(post[0])}, files {sorted(post[1])}" if post else ""))
        for role in self.roles:
            names, post, refused = found[role][:3]
            if refused:
                # (Django's admin_view refuses every generated admin page the same way: the
                # custom admin views, the index and the login page get the hostile request.)
                if not self.generated_admin:
                    self.get(role, names | {"q"}, "*", KITCHEN_SINK, "kitchen sink")
                    if post is not None:
                        self.post(role, post, "*", KITCHEN_SINK, "kitchen sink")
                continue
            full = role == sweeper and not self.generated_admin
            few = FEW if not self.generated_admin or self.key.endswith(ADMIN_FORMS) else FEW[:2]
            self.all_at_once(role, names, post, HOSTILE if full else
                             {label: HOSTILE[label] for label in few})
            if role == sweeper:
                self.one_at_a_time(role, names, post, FEW if self.generated_admin else SWEEP)
                if not self.generated_admin:
                    self.generated(role, names, post)
            if self.kind == "api" and post is not None:
                self.json_bodies(role)
        if self.kind == "api" and sweeper is not None:  # the browsable API renders HTML
            names = found[sweeper][0] | {"format"}
            for label in FEW:
                self.get(sweeper, names, "*", HOSTILE[label], label,
                         valid={**self.baseline, "format": "api"})
        self.path_segments(found, sweeper)

    def path_segments(self, found, sweeper):
        """Hostile text in each free-text path parameter: every value for the sweeping role
        (a few on Django's generated admin pages), one for the others (refused roles on our
        own views only)."""
        if self.generated_admin and not self.key.endswith("_change"):
            return  # the object id of delete/history pages is looked up as the change page's
        for name, template in self.free.items():
            for role in self.roles:
                refused = found[role][2]
                if refused and self.generated_admin:
                    continue
                labels = ((IN_PATH if not self.generated_admin else FEW[:2])
                          if role == sweeper else IN_PATH[:1])
                for label in labels:
                    path = template.replace(PLACEHOLDER, quote_from_bytes(HOSTILE[label]))
                    self.p.send(role, "GET", path, label=f"path {name}={label}",
                                where=self.key)
                    if found[role][1] is not None:
                        self.p.send(role, "POST", path, body=b"",
                                    label=f"path {name}={label}", where=self.key)

    def all_at_once(self, role, names, post, values):
        for label, value in values.items():
            self.get(role, names, "*", value, label)
            if post is not None:
                self.post(role, post, "*", value, label)

    def one_at_a_time(self, role, names, post, labels):
        names = names - FRAMEWORK_NAMES
        for label in labels:
            for name in sorted(names):
                self.get(role, names, name, HOSTILE[label], label)
            # An admin change form's fields are Django's form fields: all at once above.
            for name in sorted(post[0] if post and not self.generated_admin else ()):
                self.post(role, post, name, HOSTILE[label], label)

    def generated(self, role, names, post):
        names_st = st.sampled_from(sorted(names | {"x"}))

        @hsettings(max_examples=HYPOTHESIS_EXAMPLES, derandomize=True, database=None,
                   deadline=None, phases=[Phase.generate], print_blob=False,
                   suppress_health_check=list(HealthCheck))
        @given(query=st.dictionaries(names_st, hostile_values(), max_size=4),
               form=st.dictionaries(names_st, hostile_values(), max_size=4))
        def one(query, form):
            pairs = [(n, query.get(n, as_bytes(self.baseline.get(n, "x"))))
                     for n in sorted(names | set(query))]
            self.p.send(role, "GET", self.path, query=encode_pairs(pairs),
                        label="GET generated", where=self.key)
            if post is not None:
                fields, files = post
                valid = self.form_baseline.get(role, self.baseline)
                pairs = [(n, form.get(n, as_bytes(valid.get(n, "x"))))
                         for n in sorted(fields | set(form))]
                self.send_form(role, files, pairs, "POST generated")

        one()

    def json_bodies(self, role):
        for label, body in JSON_BODIES.items():
            self.p.send(role, "POST", self.path, body=body.encode("utf-8", "surrogatepass"),
                        content_type="application/json", label=f"JSON {label}",
                        where=self.key)


JSON_BODIES = {
    "list 10k deep": nested_json(10_000),
    "object 10k deep": nested_json(10_000, kind="object"),
    "object 200 deep": nested_json(200, kind="object"),
    "answer 10k deep": '{"answer":' + nested_json(10_000) + "}",
    "rows 10k deep": '{"hit_type":"pairwise_ab","title":"t","rows":' + nested_json(10_000)
                     + "}",
    "options 10k deep": '{"metrics":["bleu4"],"options":' + nested_json(10_000, kind="object")
                        + "}",
    "lone surrogate": '{"title":"\\ud800","answer":{"choice":"\\udfff"}}',
    "nul": '{"title":"\\u0000","split":"\\u0000","answer":{"choice":"\\u0000"}}',
    "huge numbers": '{"seed":1e999,"bootstrap_rounds":' + "9" * 500 + "}",
    "not json": "{\x00",
    "scalar": "9" * 5000,
}


def _values(form) -> list[tuple[str, str]]:
    return form["values"] if form else []


def _files(form) -> set[str]:
    return form["files"] if form else set()


def _own_form(page):
    """The page's POST form that posts back to the page itself (admin add/change pages, the
    custom admin views, the login page), or None."""
    if page.status_code != 200 or "html" not in page.headers.get("Content-Type", ""):
        return None
    forms = [f for f in form_values(page.content.decode("utf-8", "replace"))
             if f["action"] in ("", ".")]
    return forms[0] if forms else None


def _fuzz(fuzz_world, kinds):
    values, users, overrides = fuzz_world
    prober = Prober(clients=_clients(users))
    started = time.monotonic()
    targets = [t for t in _targets(values, overrides) if t[2] in kinds]
    with loopback_only() as outbound, quiet_4xx_logs():
        for key, path, kind, free in targets:
            _Fuzz(prober, key, path, kind, free).run()
    slowest = sorted(prober.seconds.items(), key=lambda kv: -kv[1])[:5]
    print(f"\n{kinds}: {prober.calls} requests over {len(targets)} URLs × {len(ROLES)} roles "
          f"in {time.monotonic() - started:.0f} s; statuses {dict(prober.statuses)}; "
          f"slowest {[(k, round(s, 1)) for k, s in slowest]}")
    assert not outbound, f"outbound connections attempted: {outbound}"
    assert len(targets) > 5
    assert not prober.failures, (f"{len(prober.failures)} failure(s):\n{prober.summary()}")


@pytest.mark.slow
def test_pages_and_downloads_answer_every_input_below_500(fuzz_world):
    _fuzz(fuzz_world, {"page"})


@pytest.mark.slow
def test_api_answers_every_input_below_500(fuzz_world):
    _fuzz(fuzz_world, {"api"})


@pytest.mark.slow
def test_admin_answers_every_input_below_500(fuzz_world):
    _fuzz(fuzz_world, {"admin"})


# ---------------------------------------------------------------- one test per bug fixed
# Each was a 500 before (on SQLite, PostgreSQL or both); the request that showed it, and the
# clean answer now. (Marketplace ids, e.g. a blank or 129-character workerId, are pinned in
# tests/annotation/test_pages.py.)


@pytest.mark.parametrize("url", ["/eval/leaderboard.csv", "/eval/leaderboard.json",
                                 "/eval/leaderboard/scores.csv"])
def test_a_download_name_from_the_query_cannot_break_its_header(analyst_client, url):
    # judge= went raw into Content-Disposition: CR/LF → BadHeaderError (or header injection).
    response = analyst_client.get(url + "?judge=x%0D%0ASet-Cookie:%20hijack=1")
    assert response.status_code == 200
    disposition = response.headers["Content-Disposition"]
    assert disposition.startswith("attachment; filename*=utf-8''")
    assert "\r" not in disposition and "\n" not in disposition
    assert "hijack" not in response.cookies


def test_the_schema_download_name_ignores_the_version_parameter(analyst_client):
    # drf-spectacular put ?version= into its Content-Disposition: CR/LF → BadHeaderError.
    response = analyst_client.get("/api/schema/?version=1%0D%0ASet-Cookie:%20x=1")
    assert response.status_code == 200
    assert "Set-Cookie" not in response.headers["Content-Disposition"]


@pytest.mark.parametrize("url", [
    "/eval/leaderboard/?judge=%00", "/eval/leaderboard/?split=category:a%00b",
    "/eval/leaderboard.csv?judge=a%00", "/eval/leaderboard/scores.json?judge=%00",
    "/eval/leaderboard/ratings.png?judge=%00", "/eval/leaderboard/categories.png?judge=%00",
    "/eval/leaderboard/categories.png?judge=" + "a" * 10_000,  # was a slow 10k-char title
])
def test_leaderboard_pages_refuse_a_nul_or_overlong_judge_or_split(analyst_client, url):
    # A NUL reached the query: a DataError (500) on PostgreSQL, a silent miss on SQLite.
    assert analyst_client.get(url).status_code == 400


@pytest.mark.parametrize("url", ["/pipeline/report/", "/pipeline/report.json",
                                 "/pipeline/report.csv"])
def test_pipeline_report_refuses_a_nul_or_overlong_source(admin_client_, url):
    assert admin_client_.get(url + "?source=a%00b").status_code == 400
    assert admin_client_.get(url + "?source=" + "v" * 33).status_code == 400
    assert admin_client_.get(url + "?source=visitbench").status_code == 200


def test_prolific_completion_refuses_a_nul_session(client):
    from tests.factories import make_batch

    batch = make_batch(1, n=1)
    url = reverse("annotation:prolific_done", args=[batch.uuid])
    assert client.post(url, {"assignmentId": "a\x00b"}).status_code == 400


def test_report_file_with_a_nul_in_its_name_is_a_404(analyst_client):
    from agreement.models import Report, ReportFile

    report = Report.objects.create(title="r", created_at=timezone.now(), data={},
                                   status=Report.Status.DONE)
    ReportFile.objects.create(report=report, name="t.csv", content=b"a\n",
                              content_type="text/csv")
    base = f"/reports/{report.uuid}/files/"
    assert analyst_client.get(base + "t.csv%00").status_code == 404
    ok = analyst_client.get(base + "t.csv")
    assert ok.status_code == 200 and ok.headers["Content-Disposition"] == \
        'attachment; filename="t.csv"'


def test_media_path_the_os_cannot_look_up_is_a_404(client):
    assert client.get("/media/" + "a" * 300).status_code == 404  # ENAMETOOLONG


@pytest.mark.parametrize("model", ["report", "metricrun"])
def test_agreement_jobs_cannot_be_added_by_hand_in_the_admin(admin_client_, model):
    # The add form saved a row without created_at: IntegrityError.
    url = f"/admin/agreement/{model}/add/"
    assert admin_client_.get(url).status_code == 403
    assert admin_client_.post(url, {"title": "x"}).status_code == 403


@pytest.fixture
def staff_client(django_user_model):
    staff = django_user_model.objects.create_user(username="sam_staff", password="pw",
                                                  is_staff=True)
    client = Client()
    client.force_login(staff)
    return client


def test_staff_without_model_permissions_get_403_on_the_custom_admin_views(staff_client):
    # The views raised Python's PermissionError: a 500.
    from tests.factories import make_batch

    batch = make_batch(1, n=1)
    for url in ("/admin/annotation/batch/upload/", "/admin/annotation/instance/import/",
                f"/admin/annotation/marketplacebatch/{batch.pk}/launch/"):
        assert staff_client.get(url).status_code == 403, url
        assert staff_client.post(url, {"confirm": "on"}).status_code == 403, url


@pytest.mark.parametrize("body", [
    nested_json(10_000), nested_json(10_000, kind="object"), nested_json(51),
    '{"answer": ' + nested_json(10_000) + "}",
])
def test_json_bodies_nested_too_deep_are_a_400(alice, alice_client, body):
    # json.loads raised RecursionError (a 500) at about 1,000 levels.
    from annotation.engine.services.claims import task_claim_next
    from annotation.engine.services.workers import worker_for_user
    from tests.factories import make_batch

    assignment = task_claim_next(batch=make_batch(1, n=1), worker=worker_for_user(alice))
    response = alice_client.post(f"/api/my/assignments/{assignment.uuid}/submit/", body,
                                 content_type="application/json")
    assert response.status_code == 400 and "nested deeper than 50" in response.json()["detail"]


def test_json_bodies_up_to_the_depth_limit_still_parse(admin_client_):
    from annotation.core.rest import MAX_JSON_DEPTH

    deep = nested_json(MAX_JSON_DEPTH - 2, kind="object")  # inside {"rows": [ … ]}
    response = admin_client_.post("/api/batches/", '{"hit_type": "pairwise_ab", "title": "t", '
                                  f'"rows": [{deep}]}}', content_type="application/json")
    assert response.status_code == 400 and "rows" in response.json()  # the row, not the parser


@pytest.mark.parametrize("limit", ["18446744073709551616", "9" * 400])
def test_limit_beyond_64_bits_is_clamped_not_a_500(admin_client_, limit):
    # SQLite: "Python int too large" / datatype mismatch; PostgreSQL: bigint out of range.
    from tests.factories import make_batch

    make_batch(1, n=1)
    response = admin_client_.get(f"/api/batches/?limit={limit}")
    assert response.status_code == 200 and len(response.json()["results"]) == 1


def test_pages_are_capped_at_the_documented_maximum(admin_client_):
    from annotation.core.rest import MAX_PAGE_SIZE
    from tests.factories import make_batch, make_workers

    make_batch(1, n=1)
    make_workers(MAX_PAGE_SIZE + 1)
    page = admin_client_.get("/api/workers/?limit=100000").json()
    assert page["count"] == MAX_PAGE_SIZE + 1 and len(page["results"]) == MAX_PAGE_SIZE
    assert f"limit={MAX_PAGE_SIZE}" in page["next"]
    for junk in ("abc", "-5", "0", "1" * 5000):  # not a positive integer: the default page
        assert len(admin_client_.get(f"/api/workers/?limit={junk}").json()["results"]) == 100
    beyond = admin_client_.get("/api/workers/?offset=" + "9" * 400).json()
    assert beyond["results"] == [] and beyond["count"] == MAX_PAGE_SIZE + 1
    schema = admin_client_.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    limit = next(p for p in schema.json()["paths"]["/api/workers/"]["get"]["parameters"]
                 if p["name"] == "limit")
    assert limit["schema"]["maximum"] == MAX_PAGE_SIZE


def test_browsable_api_page_links_survive_an_offset_past_the_end(admin_client_):
    from tests.factories import make_workers

    make_workers(3)
    response = admin_client_.get("/api/workers/?format=api&limit=1&offset=" + "9" * 30)
    assert response.status_code == 200
