"""tests/conftest.py's real-data check: the real upstream files skip the tests that read them where the files are
missing on a developer's machine, and fail those tests when CI is set (regression: they skipped silently in CI)."""

from __future__ import annotations

import pytest

from conftest import REAL_DATA_FILES, require_real_data


def test_a_missing_folder_skips_outside_ci(tmp_path, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="absent: the real upstream InferenceX files"):
        require_real_data(tmp_path / "absent")


def test_a_missing_folder_fails_in_ci(tmp_path, monkeypatch):
    monkeypatch.setenv("CI", "1")
    with pytest.raises(pytest.fail.Exception, match=r"^CI is set, so the real-data tests must run, but .*absent"):
        require_real_data(tmp_path / "absent")


@pytest.mark.parametrize("ci", [None, "1"])
def test_a_folder_lacking_a_file_names_it(tmp_path, monkeypatch, ci):
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    for name in REAL_DATA_FILES[1:]:
        (tmp_path / name).write_text("x")
    expected = pytest.skip.Exception if ci is None else pytest.fail.Exception
    with pytest.raises(expected, match=f"lacks {REAL_DATA_FILES[0]}:"):
        require_real_data(tmp_path)


@pytest.mark.parametrize("ci", [None, "1"])
def test_a_complete_folder_is_returned_in_both_modes(tmp_path, monkeypatch, ci):
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    for name in REAL_DATA_FILES:
        (tmp_path / name).write_text("x")
    assert require_real_data(tmp_path) == tmp_path
