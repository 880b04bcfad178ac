"""The one reader of settings that name a folder or a copy of one (`treenets.core.folders.named_folder`, `copy_url`):
every value of the wrong kind is an error naming the setting, its value and what it must be."""

from __future__ import annotations

import os

import pytest

from treenets.core.errors import TreenetsError
from treenets.core.folders import copy_url, named_folder


@pytest.fixture
def places(tmp_path):
    (tmp_path / "file").write_text("mine")
    (tmp_path / "folder").mkdir()
    os.symlink(tmp_path / "nowhere", tmp_path / "broken")
    os.symlink(tmp_path / "folder", tmp_path / "link")
    os.mkfifo(tmp_path / "fifo")
    return tmp_path


@pytest.mark.parametrize("name, problem", [
    ("file", "a file, not a folder"),
    ("fifo", "not a folder"),
    ("file/x/y", "lies under {T}/file, which is a file, not a folder"),
    ("broken", "is a link to {T}/nowhere, which does not exist"),
    ("broken/x", "lies under {T}/broken, a link to {T}/nowhere, which does not exist"),
])
def test_a_value_of_the_wrong_kind_names_the_setting_its_value_and_what_it_must_be(places, name, problem):
    value = places / name
    for setting, shown, subject in (("--data", f"--data {value}", "--data"),
                                    ("$TREENETS_CACHE", f"TREENETS_CACHE={value}", "TREENETS_CACHE"),
                                    ("the default", f"{value} (the default)", "it")):
        with pytest.raises(TreenetsError) as error:
            named_folder(value, setting, "a folder: X")
        assert str(error.value) == f"{shown}: {problem.format(T=places)} ({subject} must name a folder: X)"
    assert (places / "file").read_text() == "mine"


def test_a_folder_or_a_place_for_one_is_taken_as_it_is(places, monkeypatch):
    monkeypatch.setenv("HOME", str(places))
    assert named_folder(places / "folder", "--data", "x") == places / "folder"
    assert named_folder(places / "link", "--data", "x") == places / "link"
    assert named_folder(places / "new" / "deeper", "--data", "x") == places / "new" / "deeper"  # made later
    assert named_folder("~/folder", "--data", "x") == places / "folder"
    with pytest.raises(TreenetsError, match=r"^--data .*new: does not exist \(--data must name x\)$"):
        named_folder(places / "new", "--data", "x", must_exist=True)


@pytest.mark.parametrize("value, problem", [
    ("htp:/x", "neither a folder nor a URL treenets downloads from (its scheme is htp:)"),
    ("HTTPS:/x", "a URL without a host (expected https://HOST/PATH)"),
    ("http://", "a URL without a host (expected http://HOST/PATH)"),
    ("http://[::1", "not a URL (Invalid IPv6 URL)"),
    ("mailto:me@host", "neither a folder nor a URL treenets downloads from (its scheme is mailto:)"),
])
def test_a_copy_that_is_no_url_treenets_downloads_from_is_named(value, problem):
    with pytest.raises(TreenetsError) as error:
        copy_url(value, "$TREENETS_MODELS_URL", "a copy of X")
    assert str(error.value) == (f"TREENETS_MODELS_URL={value}: {problem} (TREENETS_MODELS_URL must name a copy of X: a "
                                "folder, or an http://, https:// or file: URL)")


def test_a_copy_is_a_url_or_a_folder(places, monkeypatch):
    assert copy_url("http://host:8000/models/", "--from", "x") == "http://host:8000/models"
    assert copy_url("file:///srv/models", "--from", "x") == "file:///srv/models"
    assert copy_url(places / "folder", "--from", "x") == (places / "folder").as_uri()
    monkeypatch.chdir(places)
    (places / "ab:cd").mkdir()  # a folder whose name looks like a URL: the folder
    assert copy_url("ab:cd", "--from", "x") == (places / "ab:cd").as_uri()
    for name, problem in (("file", "a file, not a folder"), ("absent", "does not exist")):
        with pytest.raises(TreenetsError, match=f"^--from {name}: {problem} \\(--from must name x: a folder, or an "):
            copy_url(name, "--from", "x")
