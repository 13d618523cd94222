"""What the chat imports before its first frame (docs/benchmarks.md, "start → prompt drawn")."""

from __future__ import annotations

import json
import subprocess
import sys

import trio
import urwid

from rawtrio.tui.host import ChatSetup
from rawtrio.tui.layout import Layout

#: Loaded only after the first frame: the app, the transcript's blocks and what they need.
AFTER_THE_FIRST_FRAME = (
    "rawtrio.tui.app",
    "rawtrio.tui.blocks",
    "rawtrio.tui.markdown",
    "rawtrio.tui.permission",
    "rawtrio.events",
    "rawtrio.runtime.view",
    "rawtrio.permissions",
    "pygments",
)


def test_the_first_frame_is_drawn_from_the_layout_alone() -> None:
    """`rawtrio.tui.runner` draws the first frame from `rawtrio.tui.layout`: importing
    them (and drawing that layout) loads none of the app's modules."""
    code = (
        "import sys, json, urwid\n"
        "import rawtrio.tui.runner\n"
        "from rawtrio.tui.layout import Layout\n"
        "layout = Layout(None, banner=['Enter sends'], agent='…')\n"
        "canvas = layout.frame.render((80, 10), focus=True)\n"
        "text = [line.decode() for line in canvas.text]\n"
        f"loaded = [m for m in {AFTER_THE_FIRST_FRAME!r} if m in sys.modules]\n"
        "print(json.dumps({'loaded': loaded, 'text': text}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    found = json.loads(done.stdout)
    assert found["loaded"] == []
    text = found["text"]
    assert text[0].rstrip() == "Enter sends"  # the banner
    assert text[-3].startswith("›")  # the prompt
    assert text[-1].startswith(" starting… │ agent …")


async def test_the_app_takes_the_layout_over_without_changing_the_frame() -> None:
    """The loop's first redraw after the app is made finds the frame as it was drawn."""
    from rawtrio.tui.app import ChatApp

    layout = Layout(None, banner=[("dim", "Enter sends")], agent="…")
    before = screen(layout.frame)
    async with trio.open_nursery() as nursery:
        app = ChatApp(
            ChatSetup(runtime=None, options=None, agent="…", history_path=None), nursery, layout
        )
        assert app.top is layout.frame
        assert screen(app.top) == before
        app.on_keys(["h", "i"], [])  # and the keys go to the layout's prompt
        assert layout.edit.edit_text == "hi"


def screen(widget: urwid.Widget) -> list[bytes]:
    canvas = widget.render((80, 12), focus=True)
    return [*canvas.text, *(repr(row).encode() for row in canvas.content())]
