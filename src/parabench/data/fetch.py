"""Fetch a file from a mirror folder or URLs, with retries, HTTP resume and content-checksum verification.

A file is pinned by its published sha256, or by its sha1 where only that is published (d2l's files). A file with
no published checksum is trusted on first use: the first copy obtained is accepted, its sha256 recorded in
dest_dir/SHA256SUMS (sha256sum format, so `sha256sum -c SHA256SUMS` checks it), and every later copy in that
folder must match the recorded value.
"""

import contextlib
import gzip
import hashlib
import http.client
import logging
import os
import re
import shutil
import socket
import time
import urllib.error
import urllib.request
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from parabench.data.deadline import remaining_s, within_deadline
from parabench.errors import DataError, DiskFull, DownloadError
from parabench.io import NO_SPACE, write_atomic

MIRROR_ENV = "PARABENCH_DATA_MIRROR"
CHUNK_BYTES = 1 << 20
RETRYABLE_HTTP_CODES = frozenset({408, 429})
SHA256SUMS = "SHA256SUMS"
SHA256SUMS_LINE = re.compile(r"^([0-9a-fA-F]{64}) [ *](.+)$")

logger = logging.getLogger("parabench.data")


@dataclass(frozen=True)
class RemoteFile:
    """A file to fetch: its name, where to get it, and the published checksum of its content, if pinned.

    The pin is the sha256, or the sha1 where only that is published (give one, not both); for a .gz file it is
    the checksum of the decompressed content. Neither: no checksum is published, so the first copy is trusted
    and its sha256 recorded (see the module docstring); the recorded checksum is of the file's bytes, as
    sha256sum computes it. content_check, if given, looks at such a first copy before it is trusted and returns
    why it is not the right kind of file (an HTML error page in place of an archive), or None.
    """

    name: str
    urls: tuple[str, ...]
    sha256: str | None
    content_check: Callable[[Path], str | None] | None = None
    sha1: str | None = None

    def __post_init__(self) -> None:
        if self.sha256 is not None and self.sha1 is not None:
            raise ValueError(f"RemoteFile {self.name} pins both a sha256 and a sha1; pin the one that is published")

    @property
    def pin(self) -> tuple[str, str] | None:
        """The published checksum as (algorithm, lowercase hex digest), or None when the file is unpinned."""
        if self.sha256 is not None:
            return "sha256", self.sha256.lower()
        if self.sha1 is not None:
            return "sha1", self.sha1.lower()
        return None


@dataclass(frozen=True)
class FetchedFile:
    """A verified file in the destination folder, and where it came from: a URL, a mirror folder, or itself."""

    path: Path
    source: str


class _SourceFailed(Exception):
    """One source could not deliver a verified file; the message says why."""


class _TransientError(Exception):
    """A failure worth retrying: a short body, a server error, a misplaced resume."""


class _RangeNotSatisfiable(Exception):
    """The server refused to resume: the part file is already complete, or invalid."""


TRANSIENT_ERRORS = (
    _TransientError,
    http.client.HTTPException,
    ConnectionError,
    TimeoutError,
    urllib.error.URLError,
)


def mirror_root() -> Path | None:
    """The local mirror folder named by PARABENCH_DATA_MIRROR, or None when it is unset or empty; one that does not
    exist is an error at once, not a miss per file."""
    value = os.environ.get(MIRROR_ENV, "").strip()
    if not value:
        return None
    folder = Path.cwd() / Path(value).expanduser()
    if not folder.is_dir():
        raise DownloadError(
            f"{MIRROR_ENV}={value} does not exist (or is not a folder; resolved to {folder}); point it at the "
            f"mirror folder, or unset it to download from the official URLs."
        )
    return folder


def content_sha256(path: Path) -> str:
    """The sha256 of the file's content, decompressing it first when its name ends in .gz."""
    return _digest(path, "sha256", gzipped=path.suffix == ".gz")


def _digest(path: Path, algorithm: str, *, gzipped: bool) -> str:
    """The hex digest (sha256 or sha1) of the file's bytes, or of its decompressed bytes when gzipped."""
    digest = hashlib.new(algorithm)
    try:
        with gzip.open(path, "rb") if gzipped else path.open("rb") as stream:
            while chunk := stream.read(CHUNK_BYTES):
                digest.update(chunk)
    except (EOFError, gzip.BadGzipFile, zlib.error) as error:
        raise DataError(f"{path} is not a valid gzip file: {error}") from error
    return digest.hexdigest()


def expected_sha256(remote: RemoteFile, dest_dir: Path) -> str | None:
    """The sha256 a copy of `remote` in dest_dir must have: the pinned one, else the one recorded at its first fetch.

    None when the file is pinned by its sha1, or unpinned and never fetched into dest_dir. For a pinned .gz file
    it is the checksum of the decompressed content (content_sha256), otherwise of the file's bytes.
    """
    expected = expected_checksum(remote, dest_dir)
    return expected[1] if expected is not None and expected[0] == "sha256" else None


def expected_checksum(remote: RemoteFile, dest_dir: Path) -> tuple[str, str] | None:
    """(algorithm, hex digest) a copy of `remote` in dest_dir must have: its pin, else the sha256 recorded at its
    first fetch; None when the file is unpinned and was never fetched into dest_dir."""
    if remote.pin is not None:
        return remote.pin
    recorded = _recorded_sha256s(dest_dir).get(remote.name)
    return ("sha256", recorded) if recorded is not None else None


def part_file(dest_dir: Path, name: str) -> Path:
    """Where a download of `name` into dest_dir grows until it is verified: beside dest_dir, not in it, since DVC
    deletes a stage's output folder before running the stage, and an interrupted download must survive that to
    be continued (data/raw/.partial/<dataset>/ for data/raw/<dataset>)."""
    return dest_dir.parent / ".partial" / dest_dir.name / f"{name}.part"


def fetch(
    remote: RemoteFile,
    dest_dir: Path,
    mirror_dir: Path | None,
    *,
    retries: int = 4,
    backoff_s: float = 1.0,
    timeout_s: float = 60.0,
    hint: str = "",
) -> FetchedFile:
    """Put a verified copy at dest_dir/name, from the mirror first, then each URL in order; say which source
    delivered it (to record the data's origin)."""
    dest = dest_dir / remote.name
    expected = expected_checksum(remote, dest_dir)
    if dest.exists():
        if _is_verified(dest, remote, expected):
            logger.info("%s is already present and verified", dest)
            return FetchedFile(dest, str(dest))
        why = "does not verify" if expected is not None else f"has no checksum recorded in {dest_dir / SHA256SUMS}"
        logger.warning("%s exists but %s; fetching it again", dest, why)
    dest_dir.mkdir(parents=True, exist_ok=True)
    part = part_file(dest_dir, remote.name)
    part.parent.mkdir(parents=True, exist_ok=True)
    failures: list[str] = []
    if mirror_dir is not None:
        mirror_file = mirror_dir / remote.name
        try:
            _copy_from_mirror(mirror_file, part)
            _accept_or_discard(part, remote, expected, str(mirror_file), dest_dir)
            _settle(part, dest)
            return FetchedFile(dest, str(mirror_dir))
        except _SourceFailed as failure:
            logger.info("mirror %s: %s", mirror_file, failure)
            failures.append(f"mirror {mirror_file}: {failure}")
    for url in remote.urls:
        try:
            _download_with_retries(
                url, part, remote, expected, retries=retries, backoff_s=backoff_s, timeout_s=timeout_s
            )
            _accept_or_discard(part, remote, expected, url, dest_dir)
            _settle(part, dest)
            return FetchedFile(dest, url)
        except _SourceFailed as failure:
            logger.info("%s: %s", url, failure)
            failures.append(f"{url}: {failure}")
    _settle(part, None)
    raise DownloadError(_failure_message(remote.name, dest_dir, failures, hint))


def _settle(part: Path, dest: Path | None) -> None:
    """Move a verified part file to dest (or delete it when dest is None), then remove .partial folders left empty."""
    if dest is None:
        part.unlink(missing_ok=True)
    else:
        os.replace(part, dest)
    for folder in (part.parent, part.parent.parent):
        with contextlib.suppress(OSError):
            folder.rmdir()


def _checksum(path: Path, remote: RemoteFile, algorithm: str) -> str:
    """The checksum of a copy of `remote` (maybe a part file): of the content for a pinned .gz, else of the bytes."""
    return _digest(path, algorithm, gzipped=remote.pin is not None and remote.name.endswith(".gz"))


def _is_verified(path: Path, remote: RemoteFile, expected: tuple[str, str] | None) -> bool:
    """Whether the copy's checksum is the expected one (an unreadable gzip, or no expected checksum, is not)."""
    if expected is None:
        return False
    algorithm, digest = expected
    try:
        return _checksum(path, remote, algorithm) == digest
    except DataError:
        return False


def _copy_from_mirror(mirror_file: Path, part: Path) -> None:
    """Copy the mirror's copy onto the part file."""
    if not mirror_file.is_file():
        raise _SourceFailed("not found in the mirror folder")
    logger.info("copying %s from the mirror %s", mirror_file.name, mirror_file)
    shutil.copyfile(mirror_file, part)


def _accept_or_discard(
    part: Path, remote: RemoteFile, expected: tuple[str, str] | None, source: str, dest_dir: Path
) -> None:
    """Verify the part file against the expected checksum, or trust and record it when there is none yet."""
    if expected is None:
        _trust_on_first_use(part, remote, source, dest_dir)
    else:
        _verify_or_discard(part, remote, expected, source, dest_dir)


def _verify_or_discard(part: Path, remote: RemoteFile, expected: tuple[str, str], source: str, dest_dir: Path) -> None:
    """Check the part file's checksum with the expected algorithm; delete it and fail the source when it is wrong."""
    algorithm, digest = expected
    try:
        actual = _checksum(part, remote, algorithm)
    except DataError as error:
        part.unlink(missing_ok=True)
        raise _SourceFailed(f"{remote.name} from {source} is corrupt ({error.__cause__}); deleted it") from error
    if actual != digest:
        part.unlink(missing_ok=True)
        recorded = (
            ""
            if remote.pin is not None
            else f" (recorded in {dest_dir / SHA256SUMS} at its first download; if the file changed upstream "
            "on purpose, delete its line there to trust the new copy)"
        )
        raise _SourceFailed(
            f"checksum mismatch for {remote.name} from {source}: "
            f"expected {algorithm} {digest}{recorded}, got {actual}; deleted the bad copy"
        )


def _trust_on_first_use(part: Path, remote: RemoteFile, source: str, dest_dir: Path) -> None:
    """Accept the first copy of an unpinned file, unless its content check refuses it, and record its sha256."""
    problem = remote.content_check(part) if remote.content_check is not None else None
    if problem is not None:
        part.unlink(missing_ok=True)
        raise _SourceFailed(f"{remote.name} from {source} {problem}; deleted it")
    actual = _digest(part, "sha256", gzipped=False)
    logger.warning(
        "%s is not pinned (no published checksum): trusting this first copy from %s, sha256 %s, recorded in %s; "
        "later copies in that folder must match it",
        remote.name,
        source,
        actual,
        dest_dir / SHA256SUMS,
    )
    record_sha256(dest_dir, remote.name, actual)


def _recorded_sha256s(dest_dir: Path) -> dict[str, str]:
    """The checksums recorded in dest_dir/SHA256SUMS by file name; empty when the file does not exist."""
    sums = dest_dir / SHA256SUMS
    if not sums.is_file():
        return {}
    recorded: dict[str, str] = {}
    bad_lines: list[int] = []
    for number, line in enumerate(sums.read_text().splitlines(), start=1):
        match = SHA256SUMS_LINE.match(line)
        if match:
            recorded[match.group(2)] = match.group(1).lower()
        elif line.strip():
            bad_lines.append(number)
    if bad_lines:
        raise DataError(
            f"{sums} lines {bad_lines} are not in sha256sum format '<64 hex digits>  <file name>'; "
            "fix them, or delete them and the files they name to have the files fetched and recorded again"
        )
    return recorded


def record_sha256(dest_dir: Path, name: str, sha256: str) -> None:
    """Add or replace the checksum of the file `name` in dest_dir/SHA256SUMS (sorted by name), atomically."""
    recorded = _recorded_sha256s(dest_dir) | {name: sha256}
    text = "".join(f"{digest}  {file_name}\n" for file_name, digest in sorted(recorded.items()))
    write_atomic(dest_dir / SHA256SUMS, lambda tmp: tmp.write_text(text))


def _download_with_retries(
    url: str,
    part: Path,
    remote: RemoteFile,
    expected: tuple[str, str] | None,
    *,
    retries: int,
    backoff_s: float,
    timeout_s: float,
) -> None:
    """Fill the part file with the body of `url`, resuming with HTTP Range after transient failures (and after an
    interrupted earlier run: its part file is continued, and verified like any other before it is accepted).
    A failure that cannot heal by waiting (no such host, connection refused) is not retried."""
    logger.info("downloading %s", url)
    for attempt in range(retries + 1):
        if remaining_s() == 0:
            raise _SourceFailed("not tried further: the download deadline (params.yaml data.timeout_s) has passed")
        try:
            _download_once(url, part, within_deadline(timeout_s))
            return
        except urllib.error.URLError as error:
            if isinstance(error.reason, (socket.gaierror, ConnectionRefusedError)):
                raise _SourceFailed(f"{error.reason} (not retried: waiting does not fix it)") from error
            if attempt == retries:
                raise _SourceFailed(f"gave up after {retries + 1} attempts, last error: {error}") from error
            _wait_before_retry(url, error, attempt, retries, backoff_s)
        except _RangeNotSatisfiable:
            if _is_verified(part, remote, expected):
                return
            logger.warning("%s refused to resume and the partial file cannot be verified; restarting", url)
            part.unlink(missing_ok=True)
        except TRANSIENT_ERRORS as error:
            if attempt == retries:
                raise _SourceFailed(f"gave up after {retries + 1} attempts, last error: {error}") from error
            _wait_before_retry(url, error, attempt, retries, backoff_s)
    raise _SourceFailed(f"refused to resume {retries + 1} times")


def _wait_before_retry(url: str, error: Exception, attempt: int, retries: int, backoff_s: float) -> None:
    """Exponential back-off before the next attempt."""
    delay_s = within_deadline(backoff_s * 2**attempt)
    logger.warning("%s failed (%s); retry %d of %d in %.2g s", url, error, attempt + 1, retries, delay_s)
    time.sleep(delay_s)


def _download_once(url: str, part: Path, timeout_s: float) -> None:
    """One HTTP request: resume the part file if it has bytes, else start it; raise on a short body."""
    offset = part.stat().st_size if part.exists() else 0
    headers = {"User-Agent": "parabench", "Accept-Encoding": "identity"}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    try:
        response = urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout_s)
    except urllib.error.HTTPError as error:
        error.close()
        raise _classify_http_error(error, offset) from error
    with response:
        resuming = response.status == 206
        if resuming and _content_range_start(response.headers.get("Content-Range", "")) != offset:
            part.unlink(missing_ok=True)
            raise _TransientError(f"server resumed at the wrong offset (asked for {offset})")
        if offset and not resuming:
            logger.warning("%s ignored the Range request; restarting from zero", url)
        expected = response.headers.get("Content-Length")
        received = 0
        with (
            part.open("ab" if resuming else "wb") as out,
            tqdm(
                total=int(expected) if expected else None,
                initial=0,
                unit="B",
                unit_scale=True,
                leave=False,
                desc=part.name.removesuffix(".part"),
                disable=None,
            ) as progress,
        ):
            while chunk := response.read(CHUNK_BYTES):
                try:
                    out.write(chunk)
                except OSError as error:
                    if error.errno not in NO_SPACE:
                        raise
                    raise _no_room(url, part, offset if resuming else 0, received, expected) from None
                received += len(chunk)
                progress.update(len(chunk))
    if expected is not None and received < int(expected):
        raise _TransientError(f"connection closed after {received} of {expected} bytes")


def _no_room(url: str, part: Path, resumed_at: int, received: int, length: str | None) -> DiskFull:
    """The disk filled during a download (resumed at byte `resumed_at`, `length` bytes asked for): what the file
    needs, what is free, and that the bytes received are kept for the next run to continue from."""
    kept = resumed_at + received
    whole = f"{resumed_at + int(length):,} bytes in all" if length else "more than it had"
    free = shutil.disk_usage(part.parent).free
    return DiskFull(
        f"no space left on the device while downloading {url}: the file needs {whole}, and {part.parent} has "
        f"{free:,} bytes free; the {kept:,} bytes received are kept in {part}, and the next run continues from them. "
        "Free space there and run again."
    )


def _classify_http_error(error: urllib.error.HTTPError, offset: int) -> Exception:
    """Map an HTTP error status to: resume refused, retry, or give up on this URL."""
    if error.code == 416 and offset:
        return _RangeNotSatisfiable()
    if error.code in RETRYABLE_HTTP_CODES or error.code >= 500:
        return _TransientError(f"HTTP {error.code} {error.reason}")
    return _SourceFailed(f"HTTP {error.code} {error.reason}")


def _content_range_start(content_range: str) -> int | None:
    """The first byte position of a Content-Range header such as 'bytes 100-199/200'."""
    match = re.match(r"bytes\s+(\d+)-", content_range.strip())
    return int(match.group(1)) if match else None


def _failure_message(name: str, dest_dir: Path, failures: list[str], hint: str) -> str:
    """One message listing each source tried and why it failed, then what to do."""
    tried = "\n".join(f"  - {failure}" for failure in failures) or "  (no source configured)"
    message = f"could not get a verified copy of {name} into {dest_dir}; sources tried:\n{tried}"
    return f"{message}\n{hint}" if hint else message
