"""A minimal HTTP/1.1 client on asyncio streams, for load generation.

The load generator shares the machine with the server it measures; httpx spent about a third
of a core on bookkeeping at 60 submissions/s, CPU the server then lacked. This client does only
what the load benchmark needs: one request per connection (gunicorn's sync workers close it
anyway), cookies kept by name, urlencoded POST bodies, and the status, headers and body back.
"""
import asyncio
from dataclasses import dataclass, field
from urllib.parse import urlencode, urlsplit


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    text: str


@dataclass
class Client:
    host: str
    port: int
    cookies: dict[str, str] = field(default_factory=dict)
    timeout: float = 30.0

    async def get(self, path: str, *, follow_redirects: bool = False) -> Reply:
        reply = await self._request("GET", path)
        while follow_redirects and reply.status in (301, 302, 303, 307, 308):
            reply = await self._request("GET", urlsplit(reply.headers["location"]).path)
        return reply

    async def post(self, path: str, data: dict[str, str]) -> Reply:
        return await self._request("POST", path, urlencode(data).encode())

    async def _request(self, method: str, path: str, body: bytes = b"") -> Reply:
        return await asyncio.wait_for(self._exchange(method, path, body), self.timeout)

    async def _exchange(self, method: str, path: str, body: bytes) -> Reply:
        reader, writer = await asyncio.open_connection(self.host, self.port)
        try:
            head = [f"{method} {path} HTTP/1.1", f"Host: {self.host}:{self.port}",
                    "Connection: close"]
            if self.cookies:
                head.append("Cookie: " + "; ".join(f"{k}={v}" for k, v in self.cookies.items()))
            if method == "POST":
                head += ["Content-Type: application/x-www-form-urlencoded",
                         f"Content-Length: {len(body)}",
                         f"Referer: http://{self.host}:{self.port}{path}"]
            writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
            raw = await reader.read(-1)
        finally:
            writer.close()
        header_block, _, payload = raw.partition(b"\r\n\r\n")
        status_line, *lines = header_block.decode("latin-1").split("\r\n")
        headers = {}
        for line in lines:
            name, _, value = line.partition(":")
            name, value = name.strip().lower(), value.strip()
            if name == "set-cookie":
                cookie, _, _ = value.partition(";")
                key, _, val = cookie.partition("=")
                self.cookies[key.strip()] = val.strip()
            headers[name] = value
        return Reply(int(status_line.split()[1]), headers, payload.decode("utf-8", "replace"))
