"""Server-side image fetching that is safe against SSRF and image bombs.

Why this exists: annotators and dataset imports give us image URLs that the
server must download.  A naive ``httpx.get(url)`` lets anyone make the server
talk to internal services (SSRF: 127.0.0.1, 10.x, the cloud metadata endpoint
...) or exhaust memory with huge bodies / decompression bombs.

How the SSRF defence works:

1. Only ``http``/``https`` URLs are accepted.
2. The hostname is resolved once with :func:`socket.getaddrinfo` and *every*
   resolved address must be public (see :func:`is_public_address`); one bad
   address refuses the whole host, so a split-horizon record cannot slip by.
3. DNS-rebinding is defeated by **pinning**: the request is sent to the vetted
   IP literal itself (``http://93.184.216.34/x.png``) with the original
   ``Host`` header and, for https, httpx's ``sni_hostname`` request extension,
   so TLS still sends the right SNI and the certificate is verified against the
   real hostname.  No second DNS lookup ever happens.
4. Redirects are never followed automatically; up to ``MAX_REDIRECTS`` hops are
   followed by hand and each hop goes through steps 1-3 again.
5. ``trust_env=False`` so an environment proxy (which would do its own DNS)
   is never used.

Bodies are streamed with a byte cap (checked against Content-Length first),
compressed transfer encodings are refused (so the cap counts real bytes), and
the result is checked with Pillow under a pixel cap.
"""

from __future__ import annotations

import hashlib
import io
import ipaddress
import socket
import time
import warnings
from dataclasses import dataclass
from functools import cache
from urllib.parse import urljoin, urlsplit, urlunsplit

import httpx
from PIL import Image, ImageOps

DEFAULT_TIMEOUT = 10.0
DEFAULT_MAX_BYTES = 10 * 1024 * 1024
DEFAULT_MAX_PIXELS = 40_000_000
MAX_REDIRECTS = 3
ALLOWED_FORMATS = ("JPEG", "PNG", "GIF", "WEBP", "BMP")
USER_AGENT = "vlmeval-crowd-image-fetch/1.0"

_REDIRECT_CODES = {301, 302, 303, 307, 308}
_CGNAT = ipaddress.ip_network("100.64.0.0/10")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_METADATA = {
    ipaddress.ip_address("169.254.169.254"),  # AWS/GCP/Azure/OpenStack
    ipaddress.ip_address("fd00:ec2::254"),  # AWS IPv6 IMDS
}

REASON_CODES = (
    "scheme",
    "blocked_address",
    "dns",
    "timeout",
    "too_large",
    "not_image",
    "bomb",
    "http_status",
    "unreachable",
)


class ImageFetchError(Exception):
    """A refused or failed fetch; ``reason_code`` is one of ``REASON_CODES``."""

    def __init__(self, reason_code: str, message: str):
        super().__init__(f"{reason_code}: {message}")
        self.reason_code = reason_code
        self.message = message


@dataclass(frozen=True)
class FetchedImage:
    """A downloaded (or uploaded) image that passed every check."""

    bytes: bytes
    sha256: str
    width: int
    height: int
    format: str  # Pillow format name, one of ALLOWED_FORMATS
    mime: str

    @property
    def size(self) -> int:
        return len(self.bytes)


# --------------------------------------------------------------------------
# Address vetting
# --------------------------------------------------------------------------


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """IPv4 address tunnelled inside an IPv6 one (mapped, 6to4, Teredo, NAT64)."""
    if ip.ipv4_mapped:
        return ip.ipv4_mapped
    if ip.sixtofour:
        return ip.sixtofour
    if ip.teredo:
        return ip.teredo[1]
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def is_public_address(address: str, *, allow_loopback: bool = False) -> bool:
    """True if the server may connect to ``address`` (an IP literal)."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])  # drop IPv6 scope id
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address):
        inner = _embedded_ipv4(ip)
        if inner is not None:
            return is_public_address(str(inner), allow_loopback=allow_loopback)
    if ip.is_loopback:
        return allow_loopback
    if ip in _METADATA or (isinstance(ip, ipaddress.IPv4Address) and ip in _CGNAT):
        return False
    if (
        ip.is_private
        or ip.is_link_local
        or ip.is_multicast
        or ip.is_reserved
        or ip.is_unspecified
    ):
        return False
    return ip.is_global


def _resolve(host: str, port: int, allow_loopback: bool) -> list[str]:
    """Resolve ``host`` and refuse it unless every address is public."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError, OSError) as exc:
        raise ImageFetchError("dns", f"cannot resolve {host!r}: {exc}") from exc
    addresses: list[str] = []
    for _family, _type, _proto, _canon, sockaddr in infos:
        addr = str(sockaddr[0])
        if not is_public_address(addr, allow_loopback=allow_loopback):
            raise ImageFetchError("blocked_address", f"{host!r} resolves to blocked address {addr}")
        if addr not in addresses:
            addresses.append(addr)
    if not addresses:
        raise ImageFetchError("dns", f"{host!r} has no addresses")
    return addresses


def vetted_target(url: str, *, allow_loopback: bool = False) -> tuple[_Target, list[str]]:
    """``url`` parsed and its host resolved once, refused (``ImageFetchError``) unless every
    address is public: other outbound requests (webhooks) follow the same rule and send to the
    returned addresses with ``target.pinned_url(ip)``, as the image fetch does."""
    target = _parse_url(url)
    return target, _resolve(target.host, target.port, allow_loopback)


def tls_context():
    """The verified TLS context pinned requests use (``sni_hostname`` names the real host)."""
    return _ssl_context()


# --------------------------------------------------------------------------
# Fetching
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Target:
    scheme: str
    host: str  # lower-cased hostname or IP literal, IDNA-encoded if non-ASCII
    port: int
    explicit_port: bool
    path_query: str

    @property
    def host_header(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}" if self.explicit_port else host

    def pinned_url(self, ip: str) -> str:
        literal = f"[{ip}]" if ":" in ip else ip
        netloc = f"{literal}:{self.port}" if self.explicit_port else literal
        return urlunsplit((self.scheme, netloc, self.path_query, "", ""))


def _parse_url(url: str) -> _Target:
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise ImageFetchError("scheme", f"malformed URL: {exc}") from exc
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise ImageFetchError("scheme", f"only http/https URLs are allowed, got {scheme or 'none'!r}")
    if not parts.hostname:
        raise ImageFetchError("scheme", "URL has no host")
    host = parts.hostname
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError as exc:
            raise ImageFetchError("scheme", f"invalid hostname: {exc}") from exc
    path_query = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    default = 443 if scheme == "https" else 80
    # Userinfo ("user:pass@") is deliberately dropped: it is never sent.
    return _Target(scheme, host, port or default, port is not None, path_query)


def _read_capped(response: httpx.Response, max_bytes: int, deadline: float) -> bytes:
    declared = response.headers.get("content-length")
    if declared is not None:
        try:
            if int(declared) > max_bytes:
                raise ImageFetchError("too_large", f"Content-Length {declared} exceeds {max_bytes} bytes")
        except ValueError:
            pass  # garbage header: rely on the streaming cap
    encoding = response.headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("", "identity"):
        raise ImageFetchError("not_image", f"compressed body ({encoding}) refused")
    buf = bytearray()
    for chunk in response.iter_raw():
        buf += chunk
        if len(buf) > max_bytes:
            raise ImageFetchError("too_large", f"body exceeds {max_bytes} bytes")
        if time.monotonic() > deadline:
            raise ImageFetchError("timeout", "download took too long")
    return bytes(buf)


@cache
def _ssl_context():
    """One verified TLS context for all fetches (building one costs ~0.1 s)."""
    return httpx.create_ssl_context(trust_env=False)


def _get_once(target: _Target, ip: str, timeout: float, max_bytes: int, deadline: float):
    """One pinned GET; returns (status, location, body)."""
    headers = {
        "Host": target.host_header,
        "User-Agent": USER_AGENT,
        "Accept": "image/*",
        "Accept-Encoding": "identity",
    }
    extensions = {"sni_hostname": target.host} if target.scheme == "https" else {}
    # A fresh client per hop: no connection (and its TLS identity) is reused
    # for a different hostname.
    with httpx.Client(
        timeout=timeout, follow_redirects=False, trust_env=False, verify=_ssl_context()
    ) as client:
        with client.stream(
            "GET", target.pinned_url(ip), headers=headers, extensions=extensions
        ) as response:
            if response.status_code in _REDIRECT_CODES:
                return response.status_code, response.headers.get("location"), b""
            if response.status_code != 200:
                return response.status_code, None, b""
            return 200, None, _read_capped(response, max_bytes, deadline)


def fetch_image(
    url: str,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_pixels: int = DEFAULT_MAX_PIXELS,
    allow_loopback_for_tests: bool = False,
) -> FetchedImage:
    """Download ``url`` safely and return the validated image.

    ``allow_loopback_for_tests`` lets the test-suite talk to a local server;
    it must never be wired to user input.  Private/metadata ranges stay
    blocked even when it is set.
    """
    deadline = time.monotonic() + timeout
    current = url
    for _hop in range(MAX_REDIRECTS + 1):
        target = _parse_url(current)
        addresses = _resolve(target.host, target.port, allow_loopback_for_tests)
        status = location = body = None
        last_error: Exception | None = None
        for ip in addresses:  # try each vetted address until one connects
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ImageFetchError("timeout", f"timed out fetching {url}")
            try:
                status, location, body = _get_once(target, ip, remaining, max_bytes, deadline)
                break
            except httpx.TimeoutException as exc:
                raise ImageFetchError("timeout", f"timed out fetching {current}") from exc
            except httpx.ConnectError as exc:
                last_error = exc
            except httpx.HTTPError as exc:
                raise ImageFetchError("unreachable", f"error fetching {current}: {exc}") from exc
        if status is None:
            raise ImageFetchError("unreachable", f"cannot connect to {target.host}: {last_error}")
        if status in _REDIRECT_CODES:
            if not location:
                raise ImageFetchError("http_status", f"HTTP {status} without Location")
            current = urljoin(current, location)
            continue
        if status != 200:
            raise ImageFetchError("http_status", f"HTTP {status} from {current}")
        return validate_image_bytes(body, max_pixels, max_bytes=max_bytes)
    raise ImageFetchError("http_status", f"more than {MAX_REDIRECTS} redirects")


# --------------------------------------------------------------------------
# Content checks
# --------------------------------------------------------------------------


def _open_checked(data: bytes, max_pixels: int) -> Image.Image:
    """Open, verify and fully decode ``data``; raise ImageFetchError otherwise.

    Pillow's global MAX_IMAGE_PIXELS is left alone (it is process-wide); the
    pixel cap is checked on the header size *before* decoding, and Pillow's
    own bomb warning is turned into an error inside this block only.
    """
    if not data:
        raise ImageFetchError("not_image", "empty body")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data), formats=ALLOWED_FORMATS) as probe:
                _check_pixels(probe, max_pixels)
                probe.verify()
            image = Image.open(io.BytesIO(data), formats=ALLOWED_FORMATS)
            _check_pixels(image, max_pixels)
            image.load()
            return image
    except ImageFetchError:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise ImageFetchError("bomb", str(exc)) from exc
    except Exception as exc:  # Pillow raises many types for corrupt input
        raise ImageFetchError("not_image", f"not a valid image: {exc}") from exc


def _check_pixels(image: Image.Image, max_pixels: int) -> None:
    width, height = image.size
    if width <= 0 or height <= 0:
        raise ImageFetchError("not_image", "image has no pixels")
    if width * height > max_pixels:
        raise ImageFetchError("bomb", f"{width}x{height} exceeds {max_pixels} pixels")


def validate_image_bytes(
    data: bytes, max_pixels: int = DEFAULT_MAX_PIXELS, *, max_bytes: int = DEFAULT_MAX_BYTES
) -> FetchedImage:
    """Validate uploaded or downloaded bytes and describe them."""
    if len(data) > max_bytes:
        raise ImageFetchError("too_large", f"{len(data)} bytes exceeds {max_bytes}")
    image = _open_checked(data, max_pixels)
    with image:
        fmt = image.format or ""
        width, height = image.size
    return FetchedImage(
        bytes=data,
        sha256=hashlib.sha256(data).hexdigest(),
        width=width,
        height=height,
        format=fmt,
        mime=Image.MIME.get(fmt, "application/octet-stream"),
    )


def make_thumbnail(data: bytes, max_side: int = 384) -> tuple[bytes, str]:
    """Small preview for pages: PNG if the image has transparency, else JPEG.

    Validates first (so thumbnails are bomb-safe), applies EXIF rotation and
    drops all metadata (EXIF GPS etc.) from the output.
    """
    image = _open_checked(data, DEFAULT_MAX_PIXELS)
    with image:
        image.seek(0)
        frame = ImageOps.exif_transpose(image)
        has_alpha = frame.mode in ("RGBA", "LA", "PA") or (
            frame.mode == "P" and "transparency" in frame.info
        )
        frame = frame.convert("RGBA" if has_alpha else "RGB")
        frame.thumbnail((max_side, max_side), Image.Resampling.LANCZOS)
        out = io.BytesIO()
        if has_alpha:
            frame.save(out, format="PNG", optimize=True)
            return out.getvalue(), "PNG"
        frame.save(out, format="JPEG", quality=85, optimize=True)
        return out.getvalue(), "JPEG"
