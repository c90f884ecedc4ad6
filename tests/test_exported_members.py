"""The public API: every name in `keel.__all__` exists, and every public name is listed."""

from __future__ import annotations

import keel


def test_all_names_exist_and_are_sorted() -> None:
    # Constants, then classes, then functions, each alphabetical (ruff's RUF022 order).
    assert sorted(keel.__all__, key=lambda n: (not n.isupper(), n[0].islower(), n)) == keel.__all__
    for name in keel.__all__:
        assert getattr(keel, name) is not None


def test_every_public_member_is_exported() -> None:
    # Public names load on first use: load them all here, since under xdist this test may
    # run in a process where no other test has.
    for name in keel.__all__:
        getattr(keel, name)
    public = {
        name
        for name, value in vars(keel).items()
        if not name.startswith("_") and getattr(value, "__module__", "").startswith("keel")
    }
    assert public == set(keel.__all__)


def test_the_api_stays_small() -> None:
    # About thirty names (the house style); the 31st is `Answer`, what `Engine.turn` returns.
    assert len(keel.__all__) <= 31
