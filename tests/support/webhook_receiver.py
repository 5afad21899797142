"""A loopback webhook receiver for tests (a real HTTP server on 127.0.0.1)."""
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

SECRET = "s3cret-for-tests"


class Receiver:
    """A loopback HTTP server that answers with the next scripted status and keeps what came."""

    def __init__(self, statuses=(200,)):
        self.statuses = list(statuses)
        self.requests: list[dict] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.requests.append({"headers": dict(self.headers), "body": body,
                                          "path": self.path})
                status = receiver.statuses.pop(0) if len(receiver.statuses) > 1 \
                    else receiver.statuses[0]
                self.send_response(status)
                if status in (301, 302):
                    self.send_header("Location", "http://127.0.0.1:9/elsewhere")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver_factory(settings, monkeypatch):
    settings.WEBHOOK_ALLOW_LOOPBACK = True
    settings.WEBHOOK_MAX_ATTEMPTS = 3
    monkeypatch.setenv("WEBHOOK_SECRET_TEST", SECRET)
    made = []

    def make(statuses=(200,)):
        made.append(Receiver(statuses))
        return made[-1]

    yield make
    for receiver in made:
        receiver.close()


def signature_of(request: dict) -> bool:
    """Whether a received request's signature header verifies with the test secret."""
    from annotation.webhooks import signing

    headers = {k.lower(): v for k, v in request["headers"].items()}
    return signing.signature_valid(SECRET, headers["x-vlmeval-signature"], request["body"])
