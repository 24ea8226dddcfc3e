"""fetch: verified download from a local HTTP server, resume, fallback, mirror, and failure messages."""

import gzip
import hashlib
import io
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from parabench.data.fetch import RemoteFile, content_sha256, fetch
from parabench.data.idx import write_idx
from parabench.errors import DownloadError

NAME = "images-idx3-ubyte.gz"
FAST = {"retries": 2, "backoff_s": 0.01, "timeout_s": 5.0}


@dataclass
class Route:
    """What the server does for one path."""

    body: bytes
    honour_range: bool = True
    drop_first: bool = False  # first request: full Content-Length, half the body, then close
    overstate_length_first: bool = False  # first request: Content-Length one byte too long, whole body, then close


@dataclass
class FileServer:
    """A local HTTP server's routes, the requests it saw as (path, Range header), and its base URL."""

    base: str = ""
    routes: dict[str, Route] = field(default_factory=dict)
    requests: list[tuple[str, str | None]] = field(default_factory=list)

    def url(self, path: str) -> str:
        return self.base + path

    def requests_for(self, path: str) -> list[str | None]:
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
        else:
            self._send(200, body, content_length=len(body))

    def _send_range(self, body: bytes, start: int) -> None:
        if start >= len(body):
            self._send(416, b"", content_length=0, content_range=f"bytes */{len(body)}")
            return
        content_range = f"bytes {start}-{len(body) - 1}/{len(body)}"
        self._send(206, body[start:], content_length=len(body) - start, content_range=content_range)

    def _send(self, status: int, payload: bytes, *, content_length: int, content_range: str = "") -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(content_length))
        if content_range:
            self.send_header("Content-Range", content_range)
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()

    def log_message(self, format: str, *args: object) -> None:
        """Keep the test output quiet."""


@pytest.fixture
def server() -> Iterator[FileServer]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    state = FileServer(base=f"http://127.0.0.1:{httpd.server_address[1]}")
    httpd.state = state  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    yield state
    httpd.shutdown()
    httpd.server_close()
    thread.join()


@pytest.fixture
def closed_port_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/{NAME}"


@pytest.fixture
def images() -> np.ndarray:
    return np.random.default_rng(0).integers(0, 256, size=(50, 28, 28), dtype=np.uint8)


@pytest.fixture
def raw_idx(images: np.ndarray, tmp_path: Path) -> bytes:
    """The uncompressed IDX bytes of the images."""
    path = tmp_path / "fixture" / NAME.removesuffix(".gz")
    write_idx(path, images)
    return path.read_bytes()


@pytest.fixture
def gz_body(images: np.ndarray, tmp_path: Path) -> bytes:
    """The images written by write_idx as a .gz file."""
    path = tmp_path / "fixture" / NAME
    write_idx(path, images)
    return path.read_bytes()


@pytest.fixture
def sha(raw_idx: bytes) -> str:
    return hashlib.sha256(raw_idx).hexdigest()


@pytest.fixture
def dest_dir(tmp_path: Path) -> Path:
    return tmp_path / "dest"


def _remote(sha: str, *urls: str) -> RemoteFile:
    return RemoteFile(name=NAME, urls=urls, sha256=sha)


def _other_gz(raw: bytes) -> bytes:
    """The same content gzipped with another file name, mtime and compression level in the header."""
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="renamed.idx", mode="wb", fileobj=buffer, mtime=123456789, compresslevel=1) as out:
        out.write(raw)
    return buffer.getvalue()


def test_download_verifies_and_lands_at_dest(server: FileServer, gz_body: bytes, sha: str, dest_dir: Path) -> None:
    server.routes["/" + NAME] = Route(gz_body)
    path = fetch(_remote(sha, server.url("/" + NAME)), dest_dir, None, **FAST)
    assert path == dest_dir / NAME
    assert path.read_bytes() == gz_body
    assert content_sha256(path) == sha
    assert sorted(p.name for p in dest_dir.iterdir()) == [NAME]


def test_dropped_connection_is_resumed_with_range(
    server: FileServer, gz_body: bytes, sha: str, dest_dir: Path
) -> None:
    server.routes["/" + NAME] = Route(gz_body, drop_first=True)
    path = fetch(_remote(sha, server.url("/" + NAME)), dest_dir, None, **FAST)
    assert server.requests_for("/" + NAME) == [None, f"bytes={len(gz_body) // 2}-"]
    assert path.read_bytes() == gz_body
    assert sorted(p.name for p in dest_dir.iterdir()) == [NAME]


def test_server_ignoring_range_restarts_from_zero(
    server: FileServer, gz_body: bytes, sha: str, dest_dir: Path
) -> None:
    server.routes["/" + NAME] = Route(gz_body, drop_first=True, honour_range=False)
    path = fetch(_remote(sha, server.url("/" + NAME)), dest_dir, None, **FAST)
    assert server.requests_for("/" + NAME) == [None, f"bytes={len(gz_body) // 2}-"]
    assert path.read_bytes() == gz_body


def test_range_not_satisfiable_keeps_a_complete_part_file(
    server: FileServer, gz_body: bytes, sha: str, dest_dir: Path
) -> None:
    server.routes["/" + NAME] = Route(gz_body, overstate_length_first=True)
    path = fetch(_remote(sha, server.url("/" + NAME)), dest_dir, None, **FAST)
    assert server.requests_for("/" + NAME) == [None, f"bytes={len(gz_body)}-"]
    assert path.read_bytes() == gz_body


def test_checksum_mismatch_deletes_the_file_and_says_why(server: FileServer, sha: str, dest_dir: Path) -> None:
    wrong_content = b"\0\0\x08\x01\0\0\0\x02ab"
    server.routes["/" + NAME] = Route(gzip.compress(wrong_content))
    url = server.url("/" + NAME)
    with pytest.raises(DownloadError) as raised:
        fetch(_remote(sha, url), dest_dir, None, **FAST)
    message = str(raised.value)
    for expected in (NAME, sha, hashlib.sha256(wrong_content).hexdigest(), url):
        assert expected in message
    assert list(dest_dir.iterdir()) == []


def test_corrupt_gzip_is_deleted_and_reported(server: FileServer, gz_body: bytes, sha: str, dest_dir: Path) -> None:
    server.routes["/" + NAME] = Route(gz_body[: len(gz_body) // 2])
    with pytest.raises(DownloadError, match="corrupt"):
        fetch(_remote(sha, server.url("/" + NAME)), dest_dir, None, **FAST)
    assert list(dest_dir.iterdir()) == []


def test_falls_back_to_the_next_url_after_a_404(server: FileServer, gz_body: bytes, sha: str, dest_dir: Path) -> None:
    server.routes["/mirror/" + NAME] = Route(gz_body)
    remote = _remote(sha, server.url("/missing/" + NAME), server.url("/mirror/" + NAME))
    path = fetch(remote, dest_dir, None, **FAST)
    assert server.requests_for("/missing/" + NAME) == [None]  # a 404 is not retried
    assert server.requests_for("/mirror/" + NAME) == [None]
    assert content_sha256(path) == sha


def test_a_good_mirror_file_needs_no_network(
    server: FileServer, gz_body: bytes, sha: str, dest_dir: Path, tmp_path: Path
) -> None:
    mirror_dir = tmp_path / "mirror"
    mirror_dir.mkdir()
    (mirror_dir / NAME).write_bytes(gz_body)
    server.routes["/" + NAME] = Route(gz_body)
    path = fetch(_remote(sha, server.url("/" + NAME)), dest_dir, mirror_dir, **FAST)
    assert server.requests == []
    assert path.read_bytes() == gz_body
    assert sorted(p.name for p in dest_dir.iterdir()) == [NAME]


def test_a_bad_mirror_file_falls_through_to_the_url(
    server: FileServer, gz_body: bytes, sha: str, dest_dir: Path, tmp_path: Path
) -> None:
    mirror_dir = tmp_path / "mirror"
    mirror_dir.mkdir()
    bad = gzip.compress(b"not the right content")
    (mirror_dir / NAME).write_bytes(bad)
    server.routes["/" + NAME] = Route(gz_body)
    path = fetch(_remote(sha, server.url("/" + NAME)), dest_dir, mirror_dir, **FAST)
    assert server.requests_for("/" + NAME) == [None]
    assert path.read_bytes() == gz_body
    assert (mirror_dir / NAME).read_bytes() == bad


def test_regzipped_file_has_other_bytes_but_the_same_content_checksum(
    server: FileServer, raw_idx: bytes, gz_body: bytes, sha: str, dest_dir: Path
) -> None:
    regzipped = _other_gz(raw_idx)
    assert regzipped != gz_body
    server.routes["/" + NAME] = Route(regzipped)
    path = fetch(_remote(sha, server.url("/" + NAME)), dest_dir, None, **FAST)
    assert path.read_bytes() == regzipped
    assert content_sha256(path) == sha


def test_a_verified_file_already_present_is_returned_without_network(
    server: FileServer, gz_body: bytes, sha: str, dest_dir: Path
) -> None:
    dest_dir.mkdir()
    (dest_dir / NAME).write_bytes(gz_body)
    server.routes["/" + NAME] = Route(gz_body)
    assert fetch(_remote(sha, server.url("/" + NAME)), dest_dir, None, **FAST) == dest_dir / NAME
    assert server.requests == []


def test_a_present_file_that_does_not_verify_is_fetched_again(
    server: FileServer, gz_body: bytes, sha: str, dest_dir: Path
) -> None:
    dest_dir.mkdir()
    (dest_dir / NAME).write_bytes(gzip.compress(b"stale"))
    server.routes["/" + NAME] = Route(gz_body)
    path = fetch(_remote(sha, server.url("/" + NAME)), dest_dir, None, **FAST)
    assert server.requests_for("/" + NAME) == [None]
    assert path.read_bytes() == gz_body


def test_all_sources_failing_lists_each_source_and_the_hint(
    server: FileServer, sha: str, dest_dir: Path, tmp_path: Path, closed_port_url: str
) -> None:
    mirror_dir = tmp_path / "empty-mirror"
    mirror_dir.mkdir()
    missing_url = server.url("/missing/" + NAME)
    hint = "set PARABENCH_DATA_MIRROR to a folder that holds dataset/" + NAME
    with pytest.raises(DownloadError) as raised:
        fetch(_remote(sha, missing_url, closed_port_url), dest_dir, mirror_dir, hint=hint, **FAST)
    message = str(raised.value)
    for expected in (str(mirror_dir / NAME), missing_url, "404", closed_port_url, "3 attempts", hint):
        assert expected in message
    assert list(dest_dir.iterdir()) == []
