"""Fetch a file from a mirror folder or URLs, with retries, HTTP resume and content-checksum verification."""

import gzip
import hashlib
import http.client
import logging
import os
import re
import shutil
import time
import urllib.error
import urllib.request
import zlib
from dataclasses import dataclass
from pathlib import Path

from parabench.errors import DataError, DownloadError

MIRROR_ENV = "PARABENCH_DATA_MIRROR"
CHUNK_BYTES = 1 << 20
RETRYABLE_HTTP_CODES = frozenset({408, 429})

logger = logging.getLogger("parabench.data")


@dataclass(frozen=True)
class RemoteFile:
    """A file to fetch: its name, where to get it, and the sha256 of its content (decompressed for .gz)."""

    name: str
    urls: tuple[str, ...]
    sha256: str


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
    """The local mirror folder named by PARABENCH_DATA_MIRROR, or None when it is unset or empty."""
    value = os.environ.get(MIRROR_ENV, "").strip()
    if not value:
        return None
    return Path.cwd() / Path(value).expanduser()


def content_sha256(path: Path) -> str:
    """The sha256 of the file's content, decompressing it first when its name ends in .gz."""
    return _sha256(path, gzipped=path.suffix == ".gz")


def _sha256(path: Path, *, gzipped: bool) -> str:
    """The sha256 of the file's bytes, or of its decompressed bytes when gzipped, read in chunks."""
    digest = hashlib.sha256()
    try:
        with gzip.open(path, "rb") if gzipped else path.open("rb") as stream:
            while chunk := stream.read(CHUNK_BYTES):
                digest.update(chunk)
    except (EOFError, gzip.BadGzipFile, zlib.error) as error:
        raise DataError(f"{path} is not a valid gzip file: {error}") from error
    return digest.hexdigest()


def fetch(
    remote: RemoteFile,
    dest_dir: Path,
    mirror_dir: Path | None,
    *,
    retries: int = 4,
    backoff_s: float = 1.0,
    timeout_s: float = 60.0,
    hint: str = "",
) -> Path:
    """Return dest_dir/name holding verified content, taken from the mirror first, then each URL in order."""
    dest = dest_dir / remote.name
    if dest.exists():
        if _is_verified(dest, remote):
            logger.info("%s is already present and verified", dest)
            return dest
        logger.warning("%s exists but does not verify; fetching it again", dest)
    dest_dir.mkdir(parents=True, exist_ok=True)
    part = dest_dir / f".{remote.name}.part"
    failures: list[str] = []
    if mirror_dir is not None:
        mirror_file = mirror_dir / remote.name
        try:
            _copy_from_mirror(mirror_file, part)
            _verify_or_discard(part, remote, str(mirror_file))
            os.replace(part, dest)
            return dest
        except _SourceFailed as failure:
            logger.info("mirror %s: %s", mirror_file, failure)
            failures.append(f"mirror {mirror_file}: {failure}")
    for url in remote.urls:
        try:
            _download_with_retries(url, part, remote, retries=retries, backoff_s=backoff_s, timeout_s=timeout_s)
            _verify_or_discard(part, remote, url)
            os.replace(part, dest)
            return dest
        except _SourceFailed as failure:
            logger.info("%s: %s", url, failure)
            failures.append(f"{url}: {failure}")
    part.unlink(missing_ok=True)
    raise DownloadError(_failure_message(remote.name, dest_dir, failures, hint))


def _remote_content_sha256(path: Path, remote: RemoteFile) -> str:
    """The content checksum of a copy of `remote` (maybe a part file): gzipped when the remote's name says so."""
    return _sha256(path, gzipped=remote.name.endswith(".gz"))


def _is_verified(path: Path, remote: RemoteFile) -> bool:
    """Whether the copy's content checksum is the remote's (an unreadable gzip is not)."""
    try:
        return _remote_content_sha256(path, remote) == remote.sha256.lower()
    except DataError:
        return False


def _copy_from_mirror(mirror_file: Path, part: Path) -> None:
    """Copy the mirror's copy onto the part file."""
    if not mirror_file.is_file():
        raise _SourceFailed("not found in the mirror folder")
    logger.info("copying %s from the mirror %s", mirror_file.name, mirror_file)
    shutil.copyfile(mirror_file, part)


def _verify_or_discard(part: Path, remote: RemoteFile, source: str) -> None:
    """Check the part file's content checksum; delete it and fail the source when it is wrong."""
    try:
        actual = _remote_content_sha256(part, remote)
    except DataError as error:
        part.unlink(missing_ok=True)
        raise _SourceFailed(f"{remote.name} from {source} is corrupt ({error.__cause__}); deleted it") from error
    if actual != remote.sha256.lower():
        part.unlink(missing_ok=True)
        raise _SourceFailed(
            f"checksum mismatch for {remote.name} from {source}: "
            f"expected sha256 {remote.sha256.lower()}, got {actual}; deleted the bad copy"
        )


def _download_with_retries(
    url: str, part: Path, remote: RemoteFile, *, retries: int, backoff_s: float, timeout_s: float
) -> None:
    """Fill the part file with the body of `url`, resuming with HTTP Range after transient failures."""
    part.unlink(missing_ok=True)
    logger.info("downloading %s", url)
    for attempt in range(retries + 1):
        try:
            _download_once(url, part, timeout_s)
            return
        except _RangeNotSatisfiable:
            if _is_verified(part, remote):
                return
            logger.warning("%s refused to resume and the partial file does not verify; restarting", url)
            part.unlink(missing_ok=True)
        except TRANSIENT_ERRORS as error:
            if attempt == retries:
                raise _SourceFailed(f"gave up after {retries + 1} attempts, last error: {error}") from error
            delay_s = backoff_s * 2**attempt
            logger.warning("%s failed (%s); retry %d of %d in %.2g s", url, error, attempt + 1, retries, delay_s)
            time.sleep(delay_s)
    raise _SourceFailed(f"refused to resume {retries + 1} times")


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
        with part.open("ab" if resuming else "wb") as out:
            while chunk := response.read(CHUNK_BYTES):
                out.write(chunk)
                received += len(chunk)
    if expected is not None and received < int(expected):
        raise _TransientError(f"connection closed after {received} of {expected} bytes")


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
