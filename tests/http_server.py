"""A local HTTP server on 127.0.0.1 for download tests: routes with byte ranges, dropped bodies, and a request log."""

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Route:
    """What the server does for one path."""

    body: bytes
    honour_range: bool = True
    drop_first: bool = False  # first request: full Content-Length, half the body, then close
    overstate_length_first: bool = False  # first request: Content-Length one byte too long, whole body, then close
    slow_first: bool = False  # first request: the body in 64 KiB pieces, 50 ms apart (time to interrupt it)


@dataclass
class FileServer:
    """A local HTTP server's routes, the requests it saw as (path, Range header), and its base URL."""

    base: str = ""
    routes: dict[str, Route] = field(default_factory=dict)
    requests: list[tuple[str, str | None]] = field(default_factory=list)

    def url(self, path: str) -> str:
        """The full URL of a path on this server."""
        return self.base + path

    def requests_for(self, path: str) -> list[str | None]:
        """The Range header of each request for `path`, in order (None: no Range)."""
        return [range_header for seen, range_header in self.requests if seen == path]


class _Handler(BaseHTTPRequestHandler):
    """Serves FileServer routes over HTTP/1.0 (one request per connection), with byte-range support."""

    def do_GET(self) -> None:
        state: FileServer = self.server.state  # type: ignore[attr-defined]
        range_header = self.headers.get("Range")
        state.requests.append((self.path, range_header))
        route = state.routes.get(self.path)
        if route is None:
            self.send_error(404)
            return
        first = len(state.requests_for(self.path)) == 1
        body = route.body
        if range_header and route.honour_range:
            self._send_range(body, int(range_header.removeprefix("bytes=").removesuffix("-")))
        elif route.drop_first and first:
            self._send(200, body[: len(body) // 2], content_length=len(body))
        elif route.overstate_length_first and first:
            self._send(200, body, content_length=len(body) + 1)
        elif route.slow_first and first:
            self._send(200, body, content_length=len(body), piece_delay_s=0.05)
        else:
            self._send(200, body, content_length=len(body))

    def _send_range(self, body: bytes, start: int) -> None:
        if start >= len(body):
            self._send(416, b"", content_length=0, content_range=f"bytes */{len(body)}")
            return
        content_range = f"bytes {start}-{len(body) - 1}/{len(body)}"
        self._send(206, body[start:], content_length=len(body) - start, content_range=content_range)

    def _send(
        self, status: int, payload: bytes, *, content_length: int, content_range: str = "", piece_delay_s: float = 0.0
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(content_length))
        if content_range:
            self.send_header("Content-Range", content_range)
        self.end_headers()
        pieces = range(0, len(payload), 1 << 16) if piece_delay_s else [0]
        try:
            for start in pieces:
                self.wfile.write(payload[start : start + (1 << 16) if piece_delay_s else len(payload)])
                self.wfile.flush()
                time.sleep(piece_delay_s)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client went away (an interrupted download)

    def log_message(self, format: str, *args: object) -> None:
        """Keep the test output quiet."""


@contextmanager
def running_file_server() -> Iterator[FileServer]:
    """Serve FileServer routes on a free port of 127.0.0.1 until the block ends."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    state = FileServer(base=f"http://127.0.0.1:{httpd.server_address[1]}")
    httpd.state = state  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()
