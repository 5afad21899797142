"""A real loopback HTTP server speaking the parts of Prolific's REST API we use.

State lives in memory; every request (method, path, headers, JSON body) is recorded so tests
can assert what was sent. ``drop_next_pay`` closes the connection on the next bonus *pay*
after recording it, like a network failure after the money moved. ``faults`` answers the next
requests, whatever they are, before they reach the API: ``"drop"`` (connection closed), a
status code, or ``(status, headers)``.

Audience, pay and groups: ``filters`` is the filter catalogue, ``eligible`` the count the
eligibility-count endpoint answers (the last filters asked about are in ``counted``),
``reward_recommendation`` the hourly rates in minor units, ``groups`` the participant groups
(id -> {"id", "name", "members": set}), ``filter_sets`` the workspace's filter sets (id ->
the filter-set object: name, version, filters, eligible_participant_count, is_deleted).
"""
import itertools
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

TOKEN = "test-prolific-token"
PAGE = 2


class FakeProlific:
    def __init__(self):
        self.studies: dict[str, dict] = {}
        self.submissions: dict[str, list[dict]] = {}
        self.bonus_setups: dict[str, dict] = {}
        self.pays: list[str] = []
        self.requests: list[tuple[str, str, dict | None]] = []
        self.drop_next_pay = False
        self.faults: list = []
        self.filters = [
            {"filter_id": "approval_rate", "title": "Approval rate", "type": "range",
             "question": "Approval rate"},
            {"filter_id": "fluent-languages", "title": "Fluent languages", "type": "select",
             "question": "Which of the following languages are you fluent in?",
             "choices": {"19": "English", "20": "French"}},
        ]
        self.eligible = 5000
        self.counted: list = []
        self.reward_recommendation = {"currency": "GBP", "min_reward_per_hour": 600,
                                      "recommended_reward_per_hour": 900}
        self.groups: dict[str, dict] = {}
        self.filter_sets: dict[str, dict] = {}
        self._ids = itertools.count(1)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.base_url = f"http://127.0.0.1:{self._server.server_port}/api/v1/"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()

    def add_submission(self, study_id, sub_id, participant, status="AWAITING REVIEW"):
        self.submissions.setdefault(study_id, []).append(
            {"id": sub_id, "participant_id": participant, "status": status,
             "completed_at": "2026-11-02T10:00:00Z"})

    def calls(self, method, prefix=""):
        return [r for r in self.requests if r[0] == method and r[1].startswith(prefix)]

    def group_named(self, name):
        return next((g for g in self.groups.values() if g["name"] == name), None)

    # --- request handling -------------------------------------------------------------------
    def handle(self, method, path, query, body):
        parts = [p for p in path.split("/") if p][2:]  # drop api/v1
        answer = self._audience(method, parts, body)
        if answer is not None:
            return answer
        if parts == ["studies"] and method == "GET":
            return 200, {"results": list(self.studies.values())}
        if parts == ["studies"] and method == "POST":
            refusal = self._screening_refusal(body)
            if refusal:
                return 400, {"error": refusal}
            study = {**body, "id": f"study{next(self._ids)}", "status": "UNPUBLISHED"}
            self.studies[study["id"]] = study
            return 201, study
        if len(parts) == 3 and parts[0] == "studies" and parts[2] == "transition":
            study = self.studies[parts[1]]
            study["status"] = {"PUBLISH": "ACTIVE", "PAUSE": "PAUSED", "START": "ACTIVE",
                               "STOP": "COMPLETED"}[body["action"]]
            return 200, study
        if len(parts) == 3 and parts[0] == "studies" and parts[2] == "submissions":
            rows = self.submissions.get(parts[1], [])
            page = int(query.get("page", ["1"])[0])
            out = {"results": rows[(page - 1) * PAGE: page * PAGE], "_links": {"next": {
                "href": None}}}
            if page * PAGE < len(rows):
                out["_links"]["next"]["href"] = (
                    f"{self.base_url}studies/{parts[1]}/submissions/?page={page + 1}")
            return 200, out
        if len(parts) == 3 and parts[0] == "submissions" and parts[2] == "transition":
            if body["action"] == "REJECT" and (len(body.get("message", "")) < 100
                                               or not body.get("rejection_category")):
                return 400, {"error": "message must be at least 100 characters"}
            for rows in self.submissions.values():
                for row in rows:
                    if row["id"] == parts[1]:
                        row["status"] = {"APPROVE": "APPROVED", "REJECT": "REJECTED"}[
                            body["action"]]
                        return 200, row
            return 404, {"error": "no such submission"}
        if parts == ["submissions", "bonus-payments"]:
            setup = {"id": f"bonus{next(self._ids)}", **body}
            self.bonus_setups[setup["id"]] = setup
            return 201, setup
        if len(parts) == 3 and parts[0] == "bulk-bonus-payments" and parts[2] == "pay":
            self.pays.append(parts[1])
            if self.drop_next_pay:
                self.drop_next_pay = False
                return None, None
            return 202, {}
        return 404, {"error": f"no route {method} {path}"}

    @staticmethod
    def _screening_refusal(body):
        """In-study screening: one SCREENED_OUT code with a fixed reward within the reward."""
        screen_outs = [c for c in body.get("completion_codes", [])
                       if c.get("code_type") == "SCREENED_OUT"]
        if not body.get("is_custom_screening"):
            return "SCREENED_OUT code without is_custom_screening" if screen_outs else ""
        if len(screen_outs) != 1:
            return "custom screening takes exactly one SCREENED_OUT code"
        (action,) = screen_outs[0]["actions"]
        if action.get("action") != "FIXED_SCREEN_OUT_PAYMENT" or not (
                0 < action.get("fixed_screen_out_reward", 0) <= body["reward"]):
            return "fixed_screen_out_reward must be positive and at most the reward"
        return ""

    def _audience(self, method, parts, body):
        """Filters, eligible counts, reward recommendations and participant groups."""
        if parts == ["filters"] and method == "GET":
            return 200, {"results": self.filters}
        if parts == ["eligibility-count"] and method == "POST":
            self.counted.append(body.get("filters"))
            return 200, {"count": self.eligible}
        if parts == ["reward-recommendations"] and method == "GET":
            return 200, [self.reward_recommendation]
        if parts == ["filter-sets"] and method == "GET":
            return 200, {"results": list(self.filter_sets.values())}
        if len(parts) == 2 and parts[0] == "filter-sets" and method == "GET":
            found = self.filter_sets.get(parts[1])
            return (200, found) if found else (404, {"error": "no such filter set"})
        if parts == ["participant-groups"] and method == "GET":
            return 200, {"results": [{"id": g["id"], "name": g["name"]}
                                     for g in self.groups.values()]}
        if parts == ["participant-groups"] and method == "POST":
            group = {"id": f"group{next(self._ids)}", "name": body["name"], "members": set()}
            self.groups[group["id"]] = group
            return 201, {"id": group["id"], "name": group["name"]}
        if (len(parts) == 3 and parts[0] == "participant-groups"
                and parts[2] == "participants" and method in ("POST", "DELETE")):
            group = self.groups.get(parts[1])
            if group is None:
                return 404, {"error": "no such group"}
            ids = set(body["participant_ids"])
            group["members"] = (group["members"] | ids if method == "POST"
                                else group["members"] - ids)
            return 200, {"results": sorted(group["members"])}
        return None

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _serve(self, method):
                url = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                fake.requests.append((method, url.path, body))
                headers = {}
                if fake.faults:
                    fault = fake.faults.pop(0)
                    status, headers = (None, {}) if fault == "drop" else (
                        fault if isinstance(fault, tuple) else (fault, {}))
                    payload = {"error": "injected fault"}
                elif self.headers.get("Authorization") != f"Token {TOKEN}":
                    status, payload = 401, {"error": "bad token"}
                else:
                    status, payload = fake.handle(method, url.path, parse_qs(url.query), body)
                if status is None:
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self._serve("GET")

            def do_POST(self):
                self._serve("POST")

            def do_DELETE(self):
                self._serve("DELETE")

        return Handler
