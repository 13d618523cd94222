"""What a project can make rawtrio read (issue 13, item 2), through the real program.

A cloned repository provides AGENTS.md, `.rawtrio/config.toml` and its prompt files. None of
them may pull a file from outside the project (an environment under /proc, a secret next
to the checkout) into the system prompt, and whatever the prompt holds passes secret
redaction before it is sent to the provider or stored."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rawtrio.testing.fake_model import FakeModelServer
from tests.headless.support import Finished, Isolation, run_rawtrio

KEY = "sk-ant-PROJECT-FILES-KEY-13579"


def project(iso: Isolation) -> Path:
    """The working directory as a repository root."""
    iso.env()
    (iso.cwd / ".git").mkdir(exist_ok=True)
    return iso.cwd


def run(iso: Isolation, server: FakeModelServer, *extra: str) -> Finished:
    return run_rawtrio(
        iso,
        "-p",
        "say hello",
        "--base-url",
        server.base_url,
        *extra,
        env={"ANTHROPIC_API_KEY": KEY},
    )


def sent(server: FakeModelServer) -> str:
    return "\n".join(json.dumps(r.body) for r in server.requests)


def key_on_disk(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]


def test_agents_md_linked_to_the_process_environment_is_refused(
    iso: Isolation, recorder: FakeModelServer
) -> None:
    (project(iso) / "AGENTS.md").symlink_to("/proc/self/environ")
    done = run(iso, recorder)
    assert done.returncode == 2, done
    assert f"AGENTS.md {iso.cwd / 'AGENTS.md'}: resolves to /proc/" in done.stderr
    assert "outside" in done.stderr
    assert recorder.requests == []
    assert key_on_disk(iso.root) == []


def test_a_secret_in_agents_md_is_redacted_before_it_is_sent_or_stored(
    iso: Isolation, recorder: FakeModelServer
) -> None:
    (project(iso) / "AGENTS.md").write_text(f"Deploy with the key {KEY} when asked.\n")
    done = run(iso, recorder)
    assert done.returncode == 0, done
    (request,) = recorder.requests
    system = json.dumps(request.body["system"])
    assert "Deploy with the key [redacted" in system
    assert KEY not in sent(recorder)
    # The database (the session record keeps the system prompt) never holds it either.
    assert key_on_disk(iso.root) == [iso.cwd / "AGENTS.md"]


@pytest.mark.parametrize("prompt_file", ["/proc/self/environ", "../../secret.txt"])
def test_an_untrusted_projects_prompt_file_is_not_read(
    iso: Isolation, recorder: FakeModelServer, prompt_file: str
) -> None:
    root = project(iso)
    (iso.root / "secret.txt").write_text(f"the secret next to the checkout: {KEY}\n")
    (root / ".rawtrio").mkdir()
    (root / ".rawtrio" / "config.toml").write_text(
        f"[agents.default]\nprompt_file = {json.dumps(prompt_file)}\n"
    )
    done = run(iso, recorder)
    assert done.returncode == 0, done
    assert "prompt_file" in done.stderr
    assert "trust" in done.stderr
    assert "secret next to the checkout" not in sent(recorder)
    assert KEY not in sent(recorder)


@pytest.mark.parametrize("prompt_file", ["/proc/self/environ", "../../secret.txt"])
def test_a_trusted_projects_prompt_file_outside_the_project_is_refused(
    iso: Isolation, recorder: FakeModelServer, prompt_file: str
) -> None:
    root = project(iso)
    (iso.root / "secret.txt").write_text(f"the secret next to the checkout: {KEY}\n")
    (root / ".rawtrio").mkdir()
    config = root / ".rawtrio" / "config.toml"
    config.write_text(f"[agents.default]\nprompt_file = {json.dumps(prompt_file)}\n")
    done = run(iso, recorder, "--trust")
    assert done.returncode == 2, done
    assert f"{config}: agents.default.prompt_file: expected a readable prompt file" in done.stderr
    assert "outside" in done.stderr
    assert recorder.requests == []


def test_a_trusted_projects_prompt_file_inside_the_project_is_used(
    iso: Isolation, recorder: FakeModelServer
) -> None:
    root = project(iso)
    (root / "prompts").mkdir()
    (root / "prompts" / "coder.md").write_text("Answer in haiku.")
    # A link inside the project is fine: only where it resolves to counts.
    os.symlink(root / "prompts" / "coder.md", root / "prompts" / "link.md")
    (root / ".rawtrio").mkdir()
    (root / ".rawtrio" / "config.toml").write_text(
        '[agents.default]\nprompt_file = "../prompts/link.md"\n'
    )
    done = run(iso, recorder, "--trust")
    assert done.returncode == 0, done
    assert "Answer in haiku." in json.dumps(recorder.requests[0].body["system"])
