"""The suite's order (tests/conftest.py): the files named longest exist and run first, longest first."""

from tests.conftest import LONGEST, PROJECT_ROOT


def test_every_file_named_longest_is_a_test_file_of_this_suite():
    missing = [name for name in LONGEST if not (PROJECT_ROOT / "tests" / name).is_file()]
    assert not missing, f"tests/conftest.py LONGEST names files that are gone: {missing}"
    assert len(set(LONGEST)) == len(LONGEST)


def test_the_collected_files_start_with_the_longest_in_their_order(request):
    files = list(dict.fromkeys(item.path.name for item in request.session.items))
    present = [name for name in LONGEST if name in files]
    assert files[: len(present)] == present
