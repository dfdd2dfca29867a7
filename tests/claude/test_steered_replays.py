"""Which steered messages a replay of Claude Code's holds (``--replay-user-messages``): it takes a message in alone,
or several that waited joined by newlines into one user message (seen with the pinned Claude Code: two messages steered
during the final text came back as ``"first\\nsecond"``), so the live run ends once both are answered."""

from __future__ import annotations

from ambient_runner.bridges.claude.steering import replay_text, taken_in


def test_one_message_alone_and_several_joined_are_taken_in() -> None:
    steers = ["NOTOOL first", "NOTOOL second"]
    assert taken_in(steers, "NOTOOL first") == ["NOTOOL first"]
    assert taken_in(steers, "NOTOOL first\nNOTOOL second") == steers
    assert taken_in(steers, "NOTOOL second") == ["NOTOOL second"]
    assert taken_in(steers, "something else") == []
    assert taken_in(["same", "same"], "same") == ["same"]  # each replayed copy counts once
    assert taken_in(["same", "same"], "same\nsame") == ["same", "same"]
    assert taken_in(["  "], "  ") == []


def test_a_replay_of_content_blocks_is_read_as_its_text() -> None:
    item = {"type": "user", "isReplay": True,
            "message": {"content": [{"type": "text", "text": "a"}, {"type": "image"}, {"type": "text", "text": "b"}]}}
    assert replay_text(item) == "a\nb"
    assert replay_text({"message": {"content": "plain"}}) == "plain"
