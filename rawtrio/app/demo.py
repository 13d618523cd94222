"""`rawtrio --demo` and `/demo`: a scripted session that works offline.

The demo runs the real thing — the real agent loop, real tools in a scratch directory, the
real chat — against the built-in fake model server (`rawtrio.testing.fake_model`) on
127.0.0.1, speaking the Anthropic wire format to the real SDK. Only the model's replies
are scripted (`SCENARIO`). The chat pre-fills each demo prompt in turn; the newcomer
presses Enter and sees streaming Markdown, a tool call, an approval prompt and a Ctrl-C
cancel of a running command. Its sessions go to a database in the scratch directory, so
the demo leaves nothing in the user's own session list.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rawtrio.permissions.policy import allow_rule_for
from rawtrio.permissions.rules import PermissionMode
from rawtrio.providers.base import ProviderSettings
from rawtrio.runtime.session import SessionOptions
from rawtrio.tools.settings import ToolSettings

DEMO_MODEL = "demo-model"
#: The demo's long command; an allow rule lets it run without asking, so the newcomer
#: meets the approval prompt once (for the file) and then the cancel.
SLOW_COMMAND = "for i in $(seq 1 60); do echo test $i passed; sleep 1; done"

#: The prompts the chat offers, in order, each with what it shows.
PROMPTS: tuple[tuple[str, str], ...] = (
    ("Show me what you can do", "streaming Markdown"),
    ("Look around this project", "a tool call that runs without asking (read-only)"),
    ("Write a hello script", "an approval: the file is written only if you allow it"),
    ("Run the slow test suite", "a long command: press Ctrl-C (or Esc) to cancel it"),
)

_INTRO = """# Welcome to the rawtrio demo

This reply is **streamed** from a fake model server on your machine, so nothing leaves it.
What you can expect:

- replies rendered as *Markdown* while they stream — no raw `**` flashing by
- tool calls as one live line each, settling to their outcome
- approvals before anything changes a file or runs a command

| key | does |
|-----|------|
| Enter | send (a prompt typed during a turn is queued) |
| Ctrl-C / Esc | cancel the running turn |
| Ctrl-C twice | leave |

```python
async with trio.open_nursery() as session:  # every session is a nursery
    session.start_soon(turn)                 # a turn is a cancel scope
```
"""

SCENARIO: dict[str, Any] = {
    "rules": [
        {
            "match": PROMPTS[0][0],
            "replies": [{"text": _INTRO, "chunk": 6, "delay_ms": 15}],
        },
        {
            "match": PROMPTS[1][0],
            "replies": [
                {
                    "thinking": "List the directory first, then read the README.",
                    "text": "Let me look at the files.",
                    "tool_calls": [{"name": "list_dir", "arguments": {"path": "."}}],
                    "chunk": 4,
                    "delay_ms": 20,
                },
                {
                    "tool_calls": [{"name": "read_file", "arguments": {"path": "README.md"}}],
                },
                {
                    "text": "This is a tiny project with a `README.md`. Press **Ctrl-O** to see "
                    "the tools' input and output.",
                    "chunk": 6,
                    "delay_ms": 15,
                },
            ],
        },
        {
            "match": PROMPTS[2][0],
            "replies": [
                {
                    "text": "I'll write `hello.py`; you decide whether I may.",
                    "tool_calls": [
                        {
                            "name": "write_file",
                            "arguments": {
                                "path": "hello.py",
                                "content": 'print("hello from the rawtrio demo")\n',
                            },
                        }
                    ],
                    "chunk": 6,
                    "delay_ms": 15,
                },
                {"text": "Done — whatever you chose is what happened.", "chunk": 6},
            ],
        },
        {
            "match": PROMPTS[3][0],
            "replies": [
                {
                    "text": "Running the suite; it takes a while. **Press Ctrl-C** to cancel.",
                    "tool_calls": [
                        {
                            "name": "bash",
                            "arguments": {"command": SLOW_COMMAND},
                        }
                    ],
                    "chunk": 6,
                    "delay_ms": 15,
                },
                {"text": "All 60 tests passed (you let it finish!)."},
            ],
        },
        {"match": "*", "replies": [{"text": "This is the demo model: try the suggested prompts."}]},
    ]
}


def prepare_scratch(root: Path) -> Path:
    """The demo's working directory, with a little project in it."""
    work = root / "project"
    work.mkdir(parents=True, exist_ok=True)
    (work / "README.md").write_text("# demo project\n\nA scratch directory for the rawtrio demo.\n")
    (work / "app.py").write_text('def main() -> None:\n    print("app")\n')
    return work


def demo_options(base_url: str, cwd: Path) -> SessionOptions:
    """The demo session: the fake server, approval asked for anything that writes or runs."""
    return SessionOptions(
        cwd=cwd,
        provider=ProviderSettings(
            kind="anthropic", model=DEMO_MODEL, api_key="demo", base_url=base_url, max_retries=0
        ),
        tools=ToolSettings(sigterm_grace_s=0.5),
        permission_mode=PermissionMode.DEFAULT,
        permission_rules=(allow_rule_for("bash", {"command": SLOW_COMMAND}, "command", "demo"),),
    )
