"""The worker channel's frames: however the bytes arrive, messages come out whole and in order."""

from __future__ import annotations

import pytest

from keel.code import protocol
from keel.code.protocol import HEADER, BrokenChannel, Frames, FrameTooLarge, frame


def test_frames_survive_any_split() -> None:
    data = frame({"op": "ready"}) + frame({"op": "done", "id": 1, "value": "é" * 3})
    for cut in range(len(data) + 1):
        frames = Frames()
        assert frames.feed(data[:cut]) + frames.feed(data[cut:]) == [
            {"op": "ready"},
            {"op": "done", "id": 1, "value": "ééé"},
        ]


def test_a_message_over_the_limit_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(protocol, "MAX_FRAME", 16)
    with pytest.raises(
        FrameTooLarge, match=r"a frame of 27 bytes is over the 16 byte limit"
    ) as err:
        frame({"value": "x" * 15})
    assert err.value.size == 27
    with pytest.raises(BrokenChannel, match=r"announces 17 bytes, over the limit"):
        Frames().feed(HEADER.pack(17))


@pytest.mark.parametrize(
    ("body", "pattern"),
    [
        pytest.param(b"{nope", r"a frame is not JSON", id="not-json"),
        pytest.param(b"[1]", r"a frame is not a JSON object", id="not-an-object"),
    ],
)
def test_what_is_not_a_frame_breaks_the_channel(body: bytes, pattern: str) -> None:
    with pytest.raises(BrokenChannel, match=pattern):
        Frames().feed(HEADER.pack(len(body)) + body)


def test_values_that_json_cannot_carry_are_refused() -> None:
    with pytest.raises(ValueError, match=r"Out of range float values are not JSON compliant"):
        frame({"value": float("nan")})
