"""The `keel` entry point: `main()` and `python -m keel`, as a shell starts them."""

from __future__ import annotations

import runpy
import sys

import pytest

from keel.cli import main


def test_an_argument_that_is_not_utf8_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A shell hands Python bytes that are not UTF-8 as lone surrogates.
    monkeypatch.setattr(
        sys, "argv", ["keel", "doctor", b"br\xffin".decode("utf-8", "surrogateescape")]
    )
    with pytest.raises(SystemExit) as ended:
        main()
    assert ended.value.code == 2
    assert "argument 2 (br\\xffin) is not valid UTF-8" in capsys.readouterr().err


def test_python_dash_m_keel_is_the_keel_command(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", ["keel", "--help"])
    with pytest.raises(SystemExit) as ended:
        runpy.run_module("keel", run_name="__main__")
    assert ended.value.code == 0
    assert "doctor" in capsys.readouterr().out
