"""extract_zip: safe members extracted all at once; unsafe members and corrupt archives refused, nothing written."""

import stat
import zipfile
from pathlib import Path

import pytest

from parabench.data.archive import extract_zip
from parabench.errors import DataError


def _zip(path: Path, members: dict[str, bytes]) -> Path:
    """A zip archive holding the members (a name ending in / is a folder)."""
    with zipfile.ZipFile(path, "w") as bundle:
        for name, data in members.items():
            bundle.writestr(name, data)
    return path


def _add_symlink(path: Path, name: str, target: str) -> None:
    """Append a member marked as a symbolic link (S_IFLNK in external_attr), as `zip --symlinks` writes it."""
    info = zipfile.ZipInfo(name)
    info.create_system = 3  # unix
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    with zipfile.ZipFile(path, "a") as bundle:
        bundle.writestr(info, target)


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_good_archive_is_extracted(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "good.zip", {"a.txt": b"a", "sub/": b"", "sub/b.txt": b"b"})
    extract_zip(archive, tmp_path / "out")
    assert _tree(tmp_path / "out") == {"a.txt": b"a", "sub/b.txt": b"b"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["good.zip", "out"]


def test_the_top_folder_can_be_stripped(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "images.zip", {"images/": b"", "images/x.jpg": b"x", "images/y.jpg": b"y"})
    extract_zip(archive, tmp_path / "out", strip_top_folder=True)
    assert _tree(tmp_path / "out") == {"x.jpg": b"x", "y.jpg": b"y"}


def test_macos_metadata_is_left_out_and_does_not_count_as_a_top_folder(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "hotdog.zip", {"hotdog/train/a.png": b"a", "__MACOSX/hotdog/train/._a.png": b"m"})
    extract_zip(archive, tmp_path / "out", strip_top_folder=True)
    assert _tree(tmp_path / "out") == {"train/a.png": b"a"}


def test_stripping_keeps_an_archive_with_several_top_entries_whole(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "two.zip", {"images/x.jpg": b"x", "readme.txt": b"r"})
    extract_zip(archive, tmp_path / "out", strip_top_folder=True)
    assert _tree(tmp_path / "out") == {"images/x.jpg": b"x", "readme.txt": b"r"}


def test_an_empty_component_after_the_top_folder_stays_inside(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "slashes.zip", {"images/x.jpg": b"x", "images//escape.txt": b"e"})
    extract_zip(archive, tmp_path / "out", strip_top_folder=True)
    assert _tree(tmp_path / "out") == {"escape.txt": b"e", "x.jpg": b"x"}


def test_extraction_replaces_an_existing_folder(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "stale.txt").write_bytes(b"old")
    extract_zip(_zip(tmp_path / "good.zip", {"a.txt": b"a"}), tmp_path / "out")
    assert _tree(tmp_path / "out") == {"a.txt": b"a"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["good.zip", "out"]


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("/etc/evil", "absolute path"),
        ("\\windows\\evil", "absolute path"),
        ("C:/evil", "drive letter"),
        ("../evil", "'..' component"),
        ("sub/../../evil", "'..' component"),
        ("sub\\..\\..\\evil", "'..' component"),
    ],
)
def test_an_unsafe_member_is_refused_by_name(tmp_path: Path, name: str, reason: str) -> None:
    archive = _zip(tmp_path / "bad.zip", {"ok.txt": b"ok", name: b"evil"})
    with pytest.raises(DataError, match=reason) as raised:
        extract_zip(archive, tmp_path / "out")
    assert repr(name) in str(raised.value) and str(archive) in str(raised.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.zip"]


def test_a_symlink_member_is_refused(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "link.zip", {"ok.txt": b"ok"})
    _add_symlink(archive, "passwd", "/etc/passwd")
    with pytest.raises(DataError, match="'passwd' is a symbolic link"):
        extract_zip(archive, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_every_unsafe_member_is_listed_in_one_error(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "bad.zip", {"ok.txt": b"ok", "/abs": b"", "../up": b""})
    _add_symlink(archive, "link", "/etc")
    with pytest.raises(DataError, match=r"3 unsafe member\(s\)") as raised:
        extract_zip(archive, tmp_path / "out")
    message = str(raised.value)
    for expected in ("'/abs' is an absolute path", "'../up' has a '..' component", "'link' is a symbolic link"):
        assert expected in message
    assert "ok.txt" not in message


def test_a_refused_archive_leaves_an_existing_folder_alone(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "kept.txt").write_bytes(b"kept")
    with pytest.raises(DataError):
        extract_zip(_zip(tmp_path / "bad.zip", {"../evil": b""}), tmp_path / "out")
    assert _tree(tmp_path / "out") == {"kept.txt": b"kept"}


@pytest.mark.parametrize("corrupt", ["truncated", "bad_crc", "not_a_zip"])
def test_a_corrupt_archive_is_refused_and_nothing_is_left(tmp_path: Path, corrupt: str) -> None:
    archive = _zip(tmp_path / "corrupt.zip", {"first.txt": b"first", "second.txt": b"second" * 100})
    data = archive.read_bytes()
    if corrupt == "truncated":
        archive.write_bytes(data[: len(data) // 2])
    elif corrupt == "bad_crc":
        archive.write_bytes(data.replace(b"second" * 100, b"SECOND" * 100))
    else:
        archive.write_bytes(b"<html>not a zip</html>")
    with pytest.raises(DataError, match="not a valid zip archive") as raised:
        extract_zip(archive, tmp_path / "out")
    assert str(archive) in str(raised.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corrupt.zip"]
