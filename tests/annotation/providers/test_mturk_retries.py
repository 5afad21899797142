"""MTurk retries are botocore's standard retry mode alone, tested against a loopback server.

The Stubber (test_mturk.py) answers before botocore's retry handler runs, so it cannot show
retries; here the real client from ``make_client`` talks HTTP to a server speaking MTurk's JSON
protocol that answers from a script. Botocore's computed back-off delays are recorded, not slept.
"""
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from botocore.retries import standard

from annotation.providers.mturk import client as mturk_client

THROTTLED = (400, {"__type": "ThrottlingException", "Message": "Rate exceeded"})
FAULT = (500, {"__type": "ServiceFault", "Message": "Internal error"})
INVALID = (400, {"__type": "RequestError", "Message": "Invalid HITId",
                 "TurkErrorCode": "AWS.MechanicalTurk.InvalidHITId"})
EMPTY_PAGE = (200, {"NumResults": 0, "Assignments": []})
HIT = (200, {"HIT": {"HITId": "3HIT1", "HITTypeId": "3TYPE1"}})


class FakeMTurk:
    """Answers each request with the next scripted ``(status, body)``; records (operation, body)."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.requests: list[tuple[str, dict]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                operation = self.headers.get("X-Amz-Target", "").rsplit(".", 1)[-1]
                fake.requests.append((operation, json.loads(self.rfile.read(length) or b"{}")))
                status, body = fake.answers.pop(0)
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/x-amz-json-1.1")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("x-amzn-RequestId", "req-1")
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_port}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self):
        self._server.shutdown()
        self._server.server_close()

    def operations(self):
        return [op for op, _ in self.requests]


@pytest.fixture
def aws(settings, monkeypatch, tmp_path):
    """Dummy credentials, no profiles or instance metadata; back-offs recorded, not slept."""
    for name in ("AWS_PROFILE", "AWS_RETRY_MODE", "AWS_MAX_ATTEMPTS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    settings.MTURK_PRODUCTION = False
    delays: list[float] = []
    computed = standard.ExponentialBackoff.delay_amount

    def record(self, context):
        delays.append(computed(self, context))
        return 0

    monkeypatch.setattr(standard.ExponentialBackoff, "delay_amount", record)
    return delays


def serve(settings, *answers):
    fake = FakeMTurk(*answers)
    settings.MTURK_ENDPOINT_URL = fake.url
    return fake


def test_the_client_is_configured_with_botocore_standard_retries(settings, aws):
    settings.MTURK_MAX_ATTEMPTS = 4
    client = mturk_client.make_client()
    assert client.meta.config.retries == {"mode": "standard", "total_max_attempts": 4}


def test_throttling_is_retried_by_botocore_then_succeeds(settings, aws):
    settings.MTURK_MAX_ATTEMPTS = 6
    fake = serve(settings, THROTTLED, THROTTLED, EMPTY_PAGE)
    try:
        page = mturk_client.call(mturk_client.make_client(), "list_assignments_for_hit",
                                 HITId="3HIT1")
    finally:
        fake.close()
    assert page["Assignments"] == []
    assert fake.operations() == ["ListAssignmentsForHIT"] * 3
    # botocore's throttling back-off: rand * 1 s, then rand * 2 s
    assert len(aws) == 2 and 0 <= aws[0] <= 1 and 0 <= aws[1] <= 2


def test_attempts_stop_at_the_setting_and_throttling_is_a_definite_failure(settings, aws):
    settings.MTURK_MAX_ATTEMPTS = 3
    fake = serve(settings, THROTTLED, THROTTLED, THROTTLED, EMPTY_PAGE)
    try:
        with pytest.raises(mturk_client.MTurkError) as caught:
            mturk_client.call(mturk_client.make_client(), "list_assignments_for_hit",
                              HITId="3HIT1")
    finally:
        fake.close()
    assert len(fake.requests) == 3  # 3 in all, not 3 × 3 as with a loop on top
    assert caught.value.code == "ThrottlingException" and caught.value.definite


def test_a_service_fault_is_retried_with_the_same_token_and_is_never_definite(settings, aws):
    settings.MTURK_MAX_ATTEMPTS = 2
    fake = serve(settings, FAULT, FAULT)
    params = dict(HITTypeId="3TYPE1", MaxAssignments=3, LifetimeInSeconds=600,
                  Question="<q/>", UniqueRequestToken="task-abc")
    try:
        with pytest.raises(mturk_client.MTurkError) as caught:
            mturk_client.call(mturk_client.make_client(), "create_hit_with_hit_type", **params)
    finally:
        fake.close()
    assert fake.operations() == ["CreateHITWithHITType"] * 2
    assert {body["UniqueRequestToken"] for _, body in fake.requests} == {"task-abc"}
    assert caught.value.code == "ServiceFault" and not caught.value.definite  # may have happened


def test_a_request_error_is_not_retried(settings, aws):
    settings.MTURK_MAX_ATTEMPTS = 6
    fake = serve(settings, INVALID, HIT)
    try:
        with pytest.raises(mturk_client.MTurkError) as caught:
            mturk_client.call(mturk_client.make_client(), "get_hit", HITId="3HIT1")
    finally:
        fake.close()
    assert len(fake.requests) == 1 and aws == []
    assert caught.value.turk_code == "AWS.MechanicalTurk.InvalidHITId" and caught.value.definite


def test_connection_failure_after_the_last_attempt_is_not_definite(settings, aws):
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    settings.MTURK_ENDPOINT_URL = f"http://127.0.0.1:{port}"
    settings.MTURK_MAX_ATTEMPTS = 3
    with pytest.raises(mturk_client.MTurkError) as caught:
        mturk_client.call(mturk_client.make_client(), "get_hit", HITId="3HIT1")
    assert len(aws) == 2  # botocore retried the connection twice
    assert not caught.value.definite
