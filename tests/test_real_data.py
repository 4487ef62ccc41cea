"""tests/conftest.py's real-data check: the real upstream files skip the tests that read them where the files are
missing on a developer's machine, and fail those tests when CI is set (regression: they skipped silently in CI)."""

from __future__ import annotations

import pytest

from conftest import REAL_DATA_FILES, require_real_data


@pytest.fixture(params=[False, True], ids=["local", "CI=1"])
def in_ci(request, monkeypatch) -> bool:
    """Each test runs twice: without the variable CI, and with CI=1 as `.ci/run` sets it."""
    if request.param:
        monkeypatch.setenv("CI", "1")
    else:
        monkeypatch.delenv("CI", raising=False)
    return request.param


def refusal(folder, in_ci: bool) -> str:
    """The message require_real_data stops with, after checking it is a failure in CI and a skip elsewhere (a
    skip or a failure escaping here would end this test as itself, and a skip in CI would pass unseen)."""
    with pytest.raises((pytest.skip.Exception, pytest.fail.Exception)) as raised:
        require_real_data(folder)
    assert type(raised.value) is (pytest.fail.Exception if in_ci else pytest.skip.Exception)
    return str(raised.value)


def test_a_missing_folder_skips_locally_and_fails_in_ci(tmp_path, in_ci):
    message = refusal(tmp_path / "absent", in_ci)
    assert f"{tmp_path / 'absent'} is absent: the real upstream InferenceX files" in message
    assert message.startswith("CI is set, so the real-data tests must run, but ") is in_ci


def test_a_folder_lacking_a_file_names_it(tmp_path, in_ci):
    for name in REAL_DATA_FILES[1:]:
        (tmp_path / name).write_text("x")
    assert f"{tmp_path} lacks {REAL_DATA_FILES[0]}:" in refusal(tmp_path, in_ci)


def test_a_complete_folder_is_returned(tmp_path, in_ci):
    for name in REAL_DATA_FILES:
        (tmp_path / name).write_text("x")
    assert require_real_data(tmp_path) == tmp_path
