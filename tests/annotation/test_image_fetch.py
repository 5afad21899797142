"""Tests for annotation.core.image_fetch: SSRF refusals, caps, bombs, happy path."""

from __future__ import annotations

import hashlib
import io
import shutil
import socket
import ssl
import struct
import subprocess
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from PIL import Image

from annotation.core import image_fetch
from annotation.core.image_fetch import (
    ImageFetchError,
    fetch_image,
    is_public_address,
    make_thumbnail,
    validate_image_bytes,
)


def _png(size=(64, 48), color=(200, 30, 30), mode="RGB") -> bytes:
    out = io.BytesIO()
    Image.new(mode, size, color).save(out, format="PNG")
    return out.getvalue()


def _bomb_png(width: int, height: int) -> bytes:
    """A genuine, tiny 1-bit PNG whose pixels decompress to width*height."""

    def chunk(kind: bytes, payload: bytes) -> bytes:
        body = kind + payload
        return struct.pack(">I", len(payload)) + body + struct.pack(">I", zlib.crc32(body))

    row = b"\x00" * (1 + (width + 7) // 8)  # filter byte + packed bits, all black
    comp = zlib.compressobj(9)
    rows_per_block = 1000
    full, rest = divmod(height, rows_per_block)
    block = row * rows_per_block
    idat = b"".join(comp.compress(block) for _ in range(full)) + comp.compress(row * rest)
    idat += comp.flush()
    ihdr = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


OK_PNG = _png()
BOMB_PNG = _bomb_png(20000, 20000)


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):  # keep test output quiet
        pass

    def _send(self, status, body=b"", ctype="image/png", length=True, headers=()):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        if length:
            self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.server.seen_hosts.append(self.headers.get("Host"))
        routes = {
            "/ok.png": lambda: self._send(200, OK_PNG),
            "/big": lambda: self._send(200, b"\x00" * 5000),
            "/big-stream": lambda: self._send(200, b"\x00" * 5000, length=False),
            "/text": lambda: self._send(200, b"<html>hello</html>", ctype="text/html"),
            "/bomb.png": lambda: self._send(200, BOMB_PNG),
            "/redirect-private": lambda: self._send(302, headers=[("Location", "http://10.0.0.1/x.png")]),
            "/redirect-ok": lambda: self._send(302, headers=[("Location", "/ok.png")]),
            "/redirect-loop": lambda: self._send(302, headers=[("Location", "/redirect-loop")]),
            "/missing": lambda: self._send(404, b"nope", ctype="text/plain"),
        }
        if self.path == "/slow":
            time.sleep(1.0)
            return self._send(200, OK_PNG)
        routes.get(self.path, routes["/missing"])()


@pytest.fixture(scope="module")
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    httpd.seen_hosts = []
    httpd.handle_error = lambda request, address: None  # clients hanging up on purpose
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", httpd
    httpd.shutdown()
    httpd.server_close()


def _code(url, **kwargs) -> str:
    with pytest.raises(ImageFetchError) as info:
        fetch_image(url, **kwargs)
    return info.value.reason_code


def _fake_dns(monkeypatch, mapping) -> list[str]:
    """Resolve names from ``mapping`` (name -> IPs); IP literals resolve as usual.

    Returns the list of names looked up, so tests can count lookups.
    """
    real = socket.getaddrinfo
    lookups: list[str] = []

    def fake(host, port, *args, **kwargs):
        if is_public_address(host, allow_loopback=True) or host in ("127.0.0.1", "::1"):
            return real(host, port, *args, **kwargs)
        lookups.append(host)
        if host not in mapping:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        out = []
        for ip in mapping[host]:
            family = socket.AF_INET6 if ":" in ip else socket.AF_INET
            sockaddr = (ip, port, 0, 0) if family == socket.AF_INET6 else (ip, port)
            out.append((family, socket.SOCK_STREAM, 6, "", sockaddr))
        return out

    monkeypatch.setattr(image_fetch.socket, "getaddrinfo", fake)
    return lookups


# ---------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    "url", ["file:///etc/passwd", "ftp://example.com/a.png", "gopher://x/", "javascript:alert(1)", "http:///nohost"]
)
def test_refuses_non_http_schemes(url):
    assert _code(url) == "scheme"


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/a.png",
        "http://localhost/a.png",
        "http://[::1]/a.png",
        "http://10.1.2.3/a.png",
        "http://192.168.0.10/a.png",
        "http://169.254.169.254/latest/meta-data/",
        "http://[fd00:ec2::254]/latest/",
        "http://100.64.0.1/a.png",
        "http://0.0.0.0/a.png",
        "http://[::ffff:127.0.0.1]/a.png",
        "http://2130706433/a.png",  # 127.0.0.1 written as an integer
    ],
)
def test_refuses_internal_addresses(url):
    assert _code(url) == "blocked_address"


def test_loopback_test_switch_still_blocks_private_and_metadata():
    assert _code("http://10.0.0.1/", allow_loopback_for_tests=True) == "blocked_address"
    assert _code("http://169.254.169.254/", allow_loopback_for_tests=True) == "blocked_address"


def test_hostname_resolving_to_loopback_is_refused(monkeypatch):
    _fake_dns(monkeypatch, {"evil.example": ["127.0.0.1"]})
    assert _code("https://evil.example/cat.png") == "blocked_address"


def test_every_resolved_address_is_checked(monkeypatch):
    _fake_dns(monkeypatch, {"mixed.example": ["93.184.216.34", "10.0.0.5"]})
    assert _code("http://mixed.example/cat.png") == "blocked_address"


def test_dns_failure(monkeypatch):
    _fake_dns(monkeypatch, {})
    assert _code("http://does-not-exist.example/a.png") == "dns"


@pytest.mark.parametrize(
    "address,public",
    [
        ("93.184.216.34", True),
        ("2606:2800:220:1:248:1893:25c8:1946", True),
        ("172.16.5.4", False),
        ("224.0.0.1", False),
        ("240.0.0.1", False),
        ("fe80::1", False),
        ("ff02::1", False),
        ("64:ff9b::a00:1", False),  # NAT64 wrapping 10.0.0.1
        ("2002:7f00:1::", False),  # 6to4 wrapping 127.0.0.1
        ("not-an-ip", False),
    ],
)
def test_is_public_address(address, public):
    assert is_public_address(address) is public


def test_redirect_to_private_address_is_refused(server):
    base, _ = server
    assert _code(f"{base}/redirect-private", allow_loopback_for_tests=True) == "blocked_address"


def test_redirect_loop_is_capped(server):
    base, _ = server
    assert _code(f"{base}/redirect-loop", allow_loopback_for_tests=True) == "http_status"


# ---------------------------------------------------------------- limits


def test_oversize_body_refused_by_content_length(server):
    base, _ = server
    assert _code(f"{base}/big", max_bytes=1000, allow_loopback_for_tests=True) == "too_large"


def test_oversize_body_refused_while_streaming(server):
    base, _ = server
    assert _code(f"{base}/big-stream", max_bytes=1000, allow_loopback_for_tests=True) == "too_large"


def test_non_image_content(server):
    base, _ = server
    assert _code(f"{base}/text", allow_loopback_for_tests=True) == "not_image"


def test_http_error_status(server):
    base, _ = server
    assert _code(f"{base}/missing", allow_loopback_for_tests=True) == "http_status"


def test_timeout(server):
    base, _ = server
    assert _code(f"{base}/slow", timeout=0.3, allow_loopback_for_tests=True) == "timeout"


def test_unreachable():
    with socket.socket() as sock:  # grab a free port, then close it
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    assert _code(f"http://127.0.0.1:{port}/a.png", allow_loopback_for_tests=True) == "unreachable"


def test_decompression_bomb_served(server):
    base, _ = server
    assert len(BOMB_PNG) < 200_000  # small file ...
    assert _code(f"{base}/bomb.png", allow_loopback_for_tests=True) == "bomb"  # ... 400 MP


def test_bomb_below_pillow_limit_hits_our_cap():
    # 8000x8000 = 64 MP: under Pillow's own warning level, over our 40 MP cap.
    with pytest.raises(ImageFetchError) as info:
        validate_image_bytes(_bomb_png(8000, 8000))
    assert info.value.reason_code == "bomb"


# ---------------------------------------------------------------- happy path


def test_valid_png_is_fetched(server):
    base, _ = server
    got = fetch_image(f"{base}/ok.png", allow_loopback_for_tests=True)
    assert got.bytes == OK_PNG
    assert got.sha256 == hashlib.sha256(OK_PNG).hexdigest()
    assert (got.width, got.height, got.format, got.mime) == (64, 48, "PNG", "image/png")
    assert got.size == len(OK_PNG)


def test_redirect_is_followed_and_revetted(server):
    base, _ = server
    got = fetch_image(f"{base}/redirect-ok", allow_loopback_for_tests=True)
    assert got.sha256 == hashlib.sha256(OK_PNG).hexdigest()


def test_connection_is_pinned_and_keeps_host_header(server, monkeypatch):
    base, httpd = server
    port = httpd.server_address[1]
    lookups = _fake_dns(monkeypatch, {"images.test": ["127.0.0.1"]})
    got = fetch_image(f"http://images.test:{port}/ok.png", allow_loopback_for_tests=True)
    assert got.format == "PNG"
    assert httpd.seen_hosts[-1] == f"images.test:{port}"
    assert lookups == ["images.test"]  # resolved once, never again by httpx


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory):
    """A loopback HTTPS server whose certificate is only valid for images.test."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl CLI not available to make a test certificate")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "1",
         "-subj", "/CN=images.test", "-addext", "subjectAltName=DNS:images.test"],
        check=True, capture_output=True,
    )
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(cert, key)
    snis: list[str] = []
    server_ctx.sni_callback = lambda sock, name, ctx: snis.append(name)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    httpd.seen_hosts = []
    httpd.handle_error = lambda request, address: None
    httpd.socket = server_ctx.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield httpd, snis, ssl.create_default_context(cafile=str(cert))
    httpd.shutdown()
    httpd.server_close()


def test_https_pinning_keeps_sni_and_verifies_hostname(tls_server, monkeypatch):
    httpd, snis, client_ctx = tls_server
    port = httpd.server_address[1]
    monkeypatch.setattr(image_fetch, "_ssl_context", lambda: client_ctx)
    _fake_dns(monkeypatch, {"images.test": ["127.0.0.1"], "other.test": ["127.0.0.1"]})

    got = fetch_image(f"https://images.test:{port}/ok.png", allow_loopback_for_tests=True)
    assert got.sha256 == hashlib.sha256(OK_PNG).hexdigest()
    assert snis[-1] == "images.test"  # SNI is the hostname, not the pinned IP
    assert httpd.seen_hosts[-1] == f"images.test:{port}"
    # Same IP, different name: the certificate does not match, so it is refused.
    assert _code(f"https://other.test:{port}/ok.png", allow_loopback_for_tests=True) == "unreachable"


# ---------------------------------------------------------------- bytes helpers


def test_validate_image_bytes_formats():
    for fmt, mime in [("JPEG", "image/jpeg"), ("GIF", "image/gif"), ("WEBP", "image/webp"), ("BMP", "image/bmp")]:
        out = io.BytesIO()
        Image.new("RGB", (10, 7), (1, 2, 3)).save(out, format=fmt)
        info = validate_image_bytes(out.getvalue())
        assert (info.width, info.height, info.format, info.mime) == (10, 7, fmt, mime)


@pytest.mark.parametrize("data", [b"", b"GIF89a not really", b"%PDF-1.4", OK_PNG[:60]])
def test_validate_rejects_garbage_and_truncated(data):
    with pytest.raises(ImageFetchError) as info:
        validate_image_bytes(data)
    assert info.value.reason_code == "not_image"


def test_validate_rejects_disallowed_format():
    out = io.BytesIO()
    Image.new("RGB", (4, 4)).save(out, format="TIFF")
    with pytest.raises(ImageFetchError) as info:
        validate_image_bytes(out.getvalue())
    assert info.value.reason_code == "not_image"


def test_thumbnail_jpeg_and_png():
    data = _png(size=(1000, 500))
    thumb, fmt = make_thumbnail(data)
    assert fmt == "JPEG"
    with Image.open(io.BytesIO(thumb)) as im:
        assert im.format == "JPEG" and im.size == (384, 192)

    thumb, fmt = make_thumbnail(_png(size=(200, 400), color=(0, 0, 0, 0), mode="RGBA"), max_side=100)
    assert fmt == "PNG"
    with Image.open(io.BytesIO(thumb)) as im:
        assert im.size == (50, 100) and im.mode == "RGBA"


def test_thumbnail_refuses_bomb():
    with pytest.raises(ImageFetchError) as info:
        make_thumbnail(BOMB_PNG)
    assert info.value.reason_code == "bomb"
