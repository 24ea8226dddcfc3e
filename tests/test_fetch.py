"""fetch: verified download from a local HTTP server, resume, fallback, mirror, and failure messages."""

import errno
import gzip
import hashlib
import io
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from parabench.data.deadline import download_deadline
from parabench.data.fetch import (
    SHA256SUMS,
    FetchedFile,
    RemoteFile,
    content_sha256,
    expected_checksum,
    expected_sha256,
    fetch,
    part_file,
)
from parabench.data.idx import write_idx
from parabench.errors import DataError, DiskFull, DownloadError
from tests.http_server import FileServer, Route

NAME = "images-idx3-ubyte.gz"
FAST = {"retries": 2, "backoff_s": 0.01, "timeout_s": 5.0}


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


def test_download_verifies_and_lands_at_dest(
    server: FileServer, gz_body: bytes, sha: str, dest_dir: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    server.routes["/" + NAME] = Route(gz_body)
    path = fetch(_remote(sha, server.url("/" + NAME)), dest_dir, None, **FAST).path
    assert path == dest_dir / NAME
    assert path.read_bytes() == gz_body
    assert content_sha256(path) == sha
    assert sorted(p.name for p in dest_dir.iterdir()) == [NAME]
    assert "B/s" not in capfd.readouterr().err, "no progress bar where the output is not a terminal (a CI log)"


def test_dropped_connection_is_resumed_with_range(server: FileServer, gz_body: bytes, sha: str, dest_dir: Path) -> None:
    server.routes["/" + NAME] = Route(gz_body, drop_first=True)
    path = fetch(_remote(sha, server.url("/" + NAME)), dest_dir, None, **FAST).path
    assert server.requests_for("/" + NAME) == [None, f"bytes={len(gz_body) // 2}-"]
    assert path.read_bytes() == gz_body
    assert sorted(p.name for p in dest_dir.iterdir()) == [NAME]


def test_server_ignoring_range_restarts_from_zero(server: FileServer, gz_body: bytes, sha: str, dest_dir: Path) -> None:
    server.routes["/" + NAME] = Route(gz_body, drop_first=True, honour_range=False)
    path = fetch(_remote(sha, server.url("/" + NAME)), dest_dir, None, **FAST).path
    assert server.requests_for("/" + NAME) == [None, f"bytes={len(gz_body) // 2}-"]
    assert path.read_bytes() == gz_body


def test_range_not_satisfiable_keeps_a_complete_part_file(
    server: FileServer, gz_body: bytes, sha: str, dest_dir: Path
) -> None:
    server.routes["/" + NAME] = Route(gz_body, overstate_length_first=True)
    path = fetch(_remote(sha, server.url("/" + NAME)), dest_dir, None, **FAST).path
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
    path = fetch(remote, dest_dir, None, **FAST).path
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
    path = fetch(_remote(sha, server.url("/" + NAME)), dest_dir, mirror_dir, **FAST).path
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
    path = fetch(_remote(sha, server.url("/" + NAME)), dest_dir, mirror_dir, **FAST).path
    assert server.requests_for("/" + NAME) == [None]
    assert path.read_bytes() == gz_body
    assert (mirror_dir / NAME).read_bytes() == bad


def test_regzipped_file_has_other_bytes_but_the_same_content_checksum(
    server: FileServer, raw_idx: bytes, gz_body: bytes, sha: str, dest_dir: Path
) -> None:
    regzipped = _other_gz(raw_idx)
    assert regzipped != gz_body
    server.routes["/" + NAME] = Route(regzipped)
    path = fetch(_remote(sha, server.url("/" + NAME)), dest_dir, None, **FAST).path
    assert path.read_bytes() == regzipped
    assert content_sha256(path) == sha


def test_a_verified_file_already_present_is_returned_without_network(
    server: FileServer, gz_body: bytes, sha: str, dest_dir: Path
) -> None:
    dest_dir.mkdir()
    (dest_dir / NAME).write_bytes(gz_body)
    server.routes["/" + NAME] = Route(gz_body)
    assert fetch(_remote(sha, server.url("/" + NAME)), dest_dir, None, **FAST).path == dest_dir / NAME
    assert server.requests == []


def test_a_present_file_that_does_not_verify_is_fetched_again(
    server: FileServer, gz_body: bytes, sha: str, dest_dir: Path
) -> None:
    dest_dir.mkdir()
    (dest_dir / NAME).write_bytes(gzip.compress(b"stale"))
    server.routes["/" + NAME] = Route(gz_body)
    path = fetch(_remote(sha, server.url("/" + NAME)), dest_dir, None, **FAST).path
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
    for expected in (
        str(mirror_dir / NAME),
        missing_url,
        "404",
        closed_port_url,
        "Connection refused",
        "not retried",
        hint,
    ):
        assert expected in message
    assert list(dest_dir.iterdir()) == []


def test_a_failure_that_cannot_heal_is_not_retried(sha: str, dest_dir: Path, closed_port_url: str) -> None:
    """A refused connection fails at once: with 4 retries 10 s apart, a retry would take 10 s or more."""
    unresolvable = "http://no-such-host.invalid/" + NAME
    started = time.monotonic()
    with pytest.raises(DownloadError) as raised:
        fetch(_remote(sha, closed_port_url, unresolvable), dest_dir, None, retries=4, backoff_s=10.0, timeout_s=5.0)
    assert time.monotonic() - started < 10.0
    assert str(raised.value).count("not retried") == 2, "refused, and no such host"


def test_one_deadline_bounds_every_attempt_of_every_url(sha: str, dest_dir: Path) -> None:
    """A server that accepts the connection and never answers (a network that drops packets silently): with a
    60 s timeout per attempt and 4 retries per URL, two URLs would wait about 8 minutes; the deadline stops it
    in 2 s."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/{NAME}"
        started = time.monotonic()
        with download_deadline(2.0), pytest.raises(DownloadError) as raised:
            fetch(_remote(sha, url, url + "?again"), dest_dir, None, retries=4, backoff_s=1.0, timeout_s=60.0)
        waited = time.monotonic() - started
    assert 1.5 < waited < 6.0, waited
    assert "data.timeout_s" in str(raised.value)


def test_a_part_file_left_by_an_interrupted_run_is_continued(
    server: FileServer, gz_body: bytes, sha: str, dest_dir: Path
) -> None:
    server.routes["/" + NAME] = Route(gz_body)
    part_file(dest_dir, NAME).parent.mkdir(parents=True)
    part_file(dest_dir, NAME).write_bytes(gz_body[:100])  # what Ctrl-C left; DVC deleted dest_dir, not this
    fetch(_remote(sha, server.url("/" + NAME)), dest_dir, None, **FAST)
    assert (dest_dir / NAME).read_bytes() == gz_body and not part_file(dest_dir, NAME).exists()
    assert server.requests_for("/" + NAME) == ["bytes=100-"]


# --- unpinned files: trust on first use ---------------------------------------------------------------

UNPINNED = "images.zip"
HTML_PAGE = b"<!DOCTYPE html><html>quota exceeded</html>"


def _unpinned(*urls: str) -> RemoteFile:
    """An unpinned file whose first copy must start like a zip archive."""

    def zip_problem(path: Path) -> str | None:
        return None if path.read_bytes().startswith(b"PK") else "is not a zip archive"

    return RemoteFile(name=UNPINNED, urls=urls, sha256=None, content_check=zip_problem)


def _recorded(dest_dir: Path) -> str:
    return (dest_dir / SHA256SUMS).read_text()


def test_an_unpinned_file_is_trusted_on_first_use_and_recorded(
    server: FileServer, dest_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    body = b"PK" + bytes(range(256)) * 40
    digest = hashlib.sha256(body).hexdigest()
    server.routes["/" + UNPINNED] = Route(body)
    remote = _unpinned(server.url("/" + UNPINNED))
    assert expected_sha256(remote, dest_dir) is None
    fetched = fetch(remote, dest_dir, None, **FAST)
    assert fetched == FetchedFile(dest_dir / UNPINNED, server.url("/" + UNPINNED))
    assert fetched.path.read_bytes() == body
    assert _recorded(dest_dir) == f"{digest}  {UNPINNED}\n"
    assert expected_sha256(remote, dest_dir) == digest
    warning = next(record.getMessage() for record in caplog.records if record.levelname == "WARNING")
    assert "not pinned" in warning and digest in warning and str(dest_dir / SHA256SUMS) in warning
    assert sorted(p.name for p in dest_dir.iterdir()) == [SHA256SUMS, UNPINNED]


@pytest.mark.skipif(shutil.which("sha256sum") is None, reason="needs the sha256sum tool")
def test_the_recorded_checksums_pass_sha256sum_check(server: FileServer, dest_dir: Path) -> None:
    server.routes["/" + UNPINNED] = Route(b"PK zip bytes")
    fetch(_unpinned(server.url("/" + UNPINNED)), dest_dir, None, **FAST)
    subprocess.run(["sha256sum", "--check", "--strict", SHA256SUMS], cwd=dest_dir, check=True, capture_output=True)


def test_a_recorded_copy_already_present_needs_no_network(server: FileServer, dest_dir: Path) -> None:
    server.routes["/" + UNPINNED] = Route(b"PK first copy")
    remote = _unpinned(server.url("/" + UNPINNED))
    fetch(remote, dest_dir, None, **FAST)
    server.routes["/" + UNPINNED] = Route(b"PK changed upstream")
    assert fetch(remote, dest_dir, None, **FAST).path.read_bytes() == b"PK first copy"
    assert server.requests_for("/" + UNPINNED) == [None]


def test_a_later_copy_must_match_the_recorded_checksum(server: FileServer, dest_dir: Path) -> None:
    first = b"PK first copy"
    server.routes["/" + UNPINNED] = Route(first)
    remote = _unpinned(server.url("/" + UNPINNED))
    fetch(remote, dest_dir, None, **FAST)
    (dest_dir / UNPINNED).write_bytes(b"PK tampered")
    server.routes["/" + UNPINNED] = Route(b"PK changed upstream")
    with pytest.raises(DownloadError) as raised:
        fetch(remote, dest_dir, None, **FAST)
    message = str(raised.value)
    changed = hashlib.sha256(b"PK changed upstream").hexdigest()
    for expected in (hashlib.sha256(first).hexdigest(), changed, str(dest_dir / SHA256SUMS)):
        assert expected in message
    assert _recorded(dest_dir) == f"{hashlib.sha256(first).hexdigest()}  {UNPINNED}\n"


def test_a_resumed_download_is_checked_against_the_recorded_checksum(server: FileServer, dest_dir: Path) -> None:
    body = b"PK" + bytes(range(256)) * 40
    server.routes["/" + UNPINNED] = Route(body)
    remote = _unpinned(server.url("/" + UNPINNED))
    fetch(remote, dest_dir, None, **FAST)
    (dest_dir / UNPINNED).unlink()
    server.routes["/" + UNPINNED] = Route(body, drop_first=True)
    server.requests.clear()
    assert fetch(remote, dest_dir, None, **FAST).path.read_bytes() == body
    assert server.requests_for("/" + UNPINNED) == [None, f"bytes={len(body) // 2}-"]


def test_an_unpinned_part_file_that_cannot_be_verified_is_restarted(server: FileServer, dest_dir: Path) -> None:
    body = b"PK" + bytes(range(256)) * 4
    server.routes["/" + UNPINNED] = Route(body, overstate_length_first=True)
    path = fetch(_unpinned(server.url("/" + UNPINNED)), dest_dir, None, **FAST).path
    assert server.requests_for("/" + UNPINNED) == [None, f"bytes={len(body)}-", None]
    assert path.read_bytes() == body


def test_a_first_copy_that_fails_its_content_check_is_not_trusted(server: FileServer, dest_dir: Path) -> None:
    server.routes["/quota/" + UNPINNED] = Route(HTML_PAGE)
    server.routes["/good/" + UNPINNED] = Route(b"PK the archive")
    remote = _unpinned(server.url("/quota/" + UNPINNED), server.url("/good/" + UNPINNED))
    fetched = fetch(remote, dest_dir, None, **FAST)
    assert fetched.source == server.url("/good/" + UNPINNED)
    assert _recorded(dest_dir) == f"{hashlib.sha256(b'PK the archive').hexdigest()}  {UNPINNED}\n"


def test_only_error_pages_means_nothing_is_recorded(server: FileServer, dest_dir: Path) -> None:
    server.routes["/" + UNPINNED] = Route(HTML_PAGE)
    with pytest.raises(DownloadError, match="is not a zip archive"):
        fetch(_unpinned(server.url("/" + UNPINNED)), dest_dir, None, **FAST)
    assert list(dest_dir.iterdir()) == []


def test_an_unpinned_mirror_copy_is_trusted_and_named_as_the_source(dest_dir: Path, tmp_path: Path) -> None:
    mirror_dir = tmp_path / "mirror"
    mirror_dir.mkdir()
    (mirror_dir / UNPINNED).write_bytes(b"PK from the mirror")
    fetched = fetch(_unpinned(), dest_dir, mirror_dir, **FAST)
    assert fetched.source == str(mirror_dir)
    assert _recorded(dest_dir) == f"{hashlib.sha256(b'PK from the mirror').hexdigest()}  {UNPINNED}\n"


def test_recording_keeps_other_files_sorted(server: FileServer, dest_dir: Path) -> None:
    server.routes["/b.zip"] = Route(b"PK b")
    server.routes["/a.zip"] = Route(b"PK a")
    for name in ("b.zip", "a.zip"):
        fetch(RemoteFile(name=name, urls=(server.url("/" + name),), sha256=None), dest_dir, None, **FAST)
    lines = _recorded(dest_dir).splitlines()
    assert [line.split("  ")[1] for line in lines] == ["a.zip", "b.zip"]


def test_a_pinned_file_reports_its_pinned_checksum(sha: str, dest_dir: Path) -> None:
    assert expected_sha256(_remote(sha.upper()), dest_dir) == sha


def test_a_malformed_sha256sums_names_its_lines(dest_dir: Path) -> None:
    dest_dir.mkdir()
    (dest_dir / SHA256SUMS).write_text(f"{'0' * 64}  ok.zip\nnot a checksum line\n\nabc  short.zip\n")
    with pytest.raises(DataError, match=r"lines \[2, 4\]") as raised:
        expected_sha256(_unpinned(), dest_dir)
    assert str(dest_dir / SHA256SUMS) in str(raised.value)


# --- files pinned by sha1 (d2l publishes only sha1s) ----------------------------------------------------

SHA1_PINNED = "hotdog.zip"
SHA1_BODY = b"PK" + bytes(range(256)) * 16


def _sha1_pinned(sha1: str, *urls: str) -> RemoteFile:
    return RemoteFile(name=SHA1_PINNED, urls=urls, sha256=None, sha1=sha1)


def test_a_sha1_pinned_file_is_verified_by_its_sha1(server: FileServer, dest_dir: Path) -> None:
    server.routes["/" + SHA1_PINNED] = Route(SHA1_BODY)
    remote = _sha1_pinned(hashlib.sha1(SHA1_BODY).hexdigest().upper(), server.url("/" + SHA1_PINNED))
    assert remote.pin == ("sha1", hashlib.sha1(SHA1_BODY).hexdigest())
    assert expected_checksum(remote, dest_dir) == remote.pin and expected_sha256(remote, dest_dir) is None
    fetched = fetch(remote, dest_dir, None, **FAST)
    assert fetched == FetchedFile(dest_dir / SHA1_PINNED, server.url("/" + SHA1_PINNED))
    assert fetched.path.read_bytes() == SHA1_BODY
    assert sorted(p.name for p in dest_dir.iterdir()) == [SHA1_PINNED]  # pinned: nothing recorded in SHA256SUMS
    assert fetch(remote, dest_dir, None, **FAST).source == str(dest_dir / SHA1_PINNED)  # present and verified
    assert server.requests_for("/" + SHA1_PINNED) == [None]


def test_a_corrupt_sha1_pinned_copy_is_refused_naming_sha1_and_both_digests(server: FileServer, dest_dir: Path) -> None:
    corrupt = SHA1_BODY[:-1] + b"!"
    server.routes["/" + SHA1_PINNED] = Route(corrupt)
    pinned = hashlib.sha1(SHA1_BODY).hexdigest()
    with pytest.raises(DownloadError) as raised:
        fetch(_sha1_pinned(pinned, server.url("/" + SHA1_PINNED)), dest_dir, None, **FAST)
    message = str(raised.value)
    assert f"expected sha1 {pinned}" in message and f"got {hashlib.sha1(corrupt).hexdigest()}" in message
    assert "deleted the bad copy" in message and SHA256SUMS not in message
    assert list(dest_dir.iterdir()) == []


def test_a_sha1_pinned_mirror_copy_and_resume_use_the_sha1(server: FileServer, dest_dir: Path, tmp_path: Path) -> None:
    mirror_dir = tmp_path / "mirror"
    mirror_dir.mkdir()
    (mirror_dir / SHA1_PINNED).write_bytes(b"PK stale mirror copy")
    server.routes["/" + SHA1_PINNED] = Route(SHA1_BODY, overstate_length_first=True)
    remote = _sha1_pinned(hashlib.sha1(SHA1_BODY).hexdigest(), server.url("/" + SHA1_PINNED))
    path = fetch(remote, dest_dir, mirror_dir, **FAST).path
    assert server.requests_for("/" + SHA1_PINNED) == [None, f"bytes={len(SHA1_BODY)}-"]  # the complete part kept
    assert path.read_bytes() == SHA1_BODY


def test_a_file_cannot_be_pinned_twice() -> None:
    with pytest.raises(ValueError, match="pins both a sha256 and a sha1"):
        RemoteFile(name=SHA1_PINNED, urls=(), sha256="0" * 64, sha1="0" * 40)


def test_a_download_interrupted_by_ctrl_c_exits_130_and_the_rerun_continues_it(
    server: FileServer, dest_dir: Path, tmp_path: Path
) -> None:
    """A real SIGINT in the middle of a transfer: one line, exit 130, the partial file kept aside (never at its
    final name), and the next run asks only for the rest."""
    body = np.random.default_rng(1).integers(0, 256, 4 << 20, dtype=np.uint8).tobytes()  # 64 pieces, about 3 s
    server.routes["/big.bin"] = Route(body, slow_first=True)
    digest = hashlib.sha256(body).hexdigest()
    remote = f"RemoteFile(name='big.bin', urls=({server.url('/big.bin')!r},), sha256={digest!r})"
    script = tmp_path / "download.py"
    script.write_text(
        "from pathlib import Path\n"
        "from parabench.cli import stage_main\n"
        "from parabench.data.fetch import RemoteFile, fetch\n"
        f"stage_main(lambda: fetch({remote}, Path({str(dest_dir)!r}), None, retries=0))\n"
    )
    # As from a terminal, SIGINT reaches a process that does not ignore it: an earlier test in this pytest process
    # may have left SIGINT ignored, and a child inherits that.
    run = subprocess.Popen(
        [sys.executable, str(script)],
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    part = part_file(dest_dir, "big.bin")
    deadline = time.monotonic() + 30
    while not (part.exists() and part.stat().st_size > 0):
        assert time.monotonic() < deadline and run.poll() is None, "the download started"
        time.sleep(0.05)
    run.send_signal(signal.SIGINT)
    _, stderr = run.communicate(timeout=30)
    assert run.returncode == 130 and stderr.splitlines()[-1].startswith("interrupted: ") and "Traceback" not in stderr
    assert not (dest_dir / "big.bin").exists() and 0 < part.stat().st_size < len(body)
    kept = part.stat().st_size
    rerun = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert rerun.returncode == 0, rerun.stderr
    assert (dest_dir / "big.bin").read_bytes() == body
    assert server.requests_for("/big.bin")[-1] == f"bytes={kept}-", "only the rest was asked for"


def test_a_disk_that_fills_during_a_download_names_the_bytes_and_keeps_the_partial_file(
    server: FileServer, gz_body: bytes, sha: str, dest_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.routes["/" + NAME] = Route(gz_body)
    real_open = Path.open

    class FullDisk:
        """A part file on a disk with no room left."""

        def __init__(self, stream: Any):
            self.stream = stream

        def write(self, data: bytes) -> int:
            raise OSError(errno.ENOSPC, "No space left on device")

        def __enter__(self) -> "FullDisk":
            return self

        def __exit__(self, *exc: object) -> None:
            self.stream.close()

    def opening(path: Path, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        stream = real_open(path, mode, *args, **kwargs)
        return FullDisk(stream) if path.name.endswith(".part") and mode in ("wb", "ab") else stream

    monkeypatch.setattr(Path, "open", opening)
    with pytest.raises(DiskFull, match="no space left on the device while downloading") as full:
        fetch(_remote(sha, server.url("/" + NAME)), dest_dir, None, **FAST)
    message = str(full.value)
    assert f"needs {len(gz_body):,} bytes in all" in message and "bytes free" in message
    assert f"{part_file(dest_dir, NAME).parent} has " in message
    assert "next run continues from them" in message
    assert not (dest_dir / NAME).exists()
