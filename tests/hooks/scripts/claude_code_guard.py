#!/usr/bin/env python3
"""A PreToolUse guard written for Claude Code, exercising its input/output contract.

It does what Claude Code's bash_command_validator example does (tool_name must be "Bash",
tool_input.command, exit 2 with the reason on stderr) and answers in JSON for the rest.
If GUARD_LOG is set, it appends the input it read there, one JSON object per line.
"""

import json
import os
import re
import sys


def answer(decision: str, reason: str) -> None:
    output = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": decision,
            "permissionDecisionReason": reason,
        }
    }
    print(json.dumps(output))
    sys.exit(0)


def main() -> None:
    data = json.load(sys.stdin)
    log = os.environ.get("GUARD_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as f:
            f.write(json.dumps(data) + "\n")
    tool_name = data.get("tool_name", "")
    tool_input = data.get("tool_input", {})
    if tool_name == "Bash":
        command = tool_input.get("command", "")
        if re.search(r"^grep\b(?!.*\|)", command):
            print("• Use 'rg' (ripgrep) instead of 'grep'", file=sys.stderr)
            sys.exit(2)
        if command.startswith("rm "):
            answer("deny", "no rm through this guard")
        if command.startswith("ls"):
            answer("allow", "listing is harmless")
        if command.startswith("git push"):
            answer("ask", "pushing needs a person")
    if tool_name == "Read" and str(tool_input.get("file_path", "")).endswith(".env"):
        answer("deny", "no reading .env files")
    if tool_name == "Edit" and "TODO" in tool_input.get("new_string", ""):
        print(json.dumps({"continue": False, "stopReason": "no new TODOs"}))
        sys.exit(0)
    sys.exit(0)


if __name__ == "__main__":
    main()
