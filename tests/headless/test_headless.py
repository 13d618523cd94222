"""`rawtrio -p PROMPT`: one turn against the fake model server, in a real subprocess."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rawtrio.unicode_safety import has_lone_surrogate
from tests.headless.conftest import FakeModel
from tests.headless.support import Isolation, run_rawtrio

PROVIDERS = ("anthropic", "openai-chat", "openai-responses")
KEYS = {"ANTHROPIC_API_KEY": "test-key", "OPENAI_API_KEY": "test-key"}


def headless(fake: FakeModel, prompt: str, *flags: str, provider: str = "anthropic") -> list[str]:
    return [
        "-p",
        prompt,
        "--provider",
        provider,
        "--base-url",
        fake.url_for(provider),
        "--model",
        "test-model",
        *flags,
    ]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_text_output_is_the_answer(iso: Isolation, fake_model: FakeModel, provider: str) -> None:
    done = run_rawtrio(iso, *headless(fake_model, "say hello", provider=provider), env=KEYS)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Hello from the fake model.\n"
    assert done.stderr == ""


def test_json_output_has_outcome_result_and_usage(iso: Isolation, fake_model: FakeModel) -> None:
    done = run_rawtrio(
        iso, *headless(fake_model, "use a tool", "--output-format", "json"), env=KEYS
    )
    assert done.returncode == 0, done.stderr
    [result] = done.json_lines()
    assert result["v"] == 1
    assert result["outcome"] == "completed"
    assert result["result"] == "The tool said tool-output."
    assert result["steps"] == 2
    assert set(result["usage"]) == {
        "input_tokens",
        "output_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
        "cache_read_tokens",
        "cache_write_tokens",
        "cost_usd",
        "session_cost_usd",
        "context_tokens",
        "context_window",
    }
    assert result["usage"]["cost_usd"] is None  # no prices configured
    # The whole prompt may be a cache write (Anthropic breakpoints): count all three.
    prompt = sum(
        result["usage"][k] for k in ("input_tokens", "cache_read_tokens", "cache_write_tokens")
    )
    assert prompt >= result["usage"]["context_tokens"] > 0
    assert result["usage"]["output_tokens"] > 0
    assert result["session_id"]
    assert result["turn_id"]


def test_stream_json_is_one_event_per_line_with_increasing_seq(
    iso: Isolation, fake_model: FakeModel
) -> None:
    done = run_rawtrio(
        iso, *headless(fake_model, "use a tool", "--output-format", "events"), env=KEYS
    )
    assert done.returncode == 0, done.stderr
    events = done.json_lines()
    assert all(e["v"] == 1 for e in events)
    seqs = [e["seq"] for e in events]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))  # strictly increasing, no gaps
    types = [e["type"] for e in events]
    assert types[0] == "user_message"
    assert types[-1] == "turn_ended"
    assert types.count("turn_ended") == 1
    for expected in (
        "step_started",
        "text_delta",
        "tool_call_announced",
        "assistant_message",
        "tool_call_started",
        "tool_output_delta",
        "tool_call_finished",
        "usage",
    ):
        assert expected in types
    finished = next(e for e in events if e["type"] == "tool_call_finished")
    assert finished["status"] == "ok"
    assert "tool-output" in finished["content"]
    assert events[-1]["outcome"] == "completed"
    assert events[-1]["final_text"] == "The tool said tool-output."


def test_the_tool_runs_in_the_working_directory(iso: Isolation, fake_model: FakeModel) -> None:
    other = iso.root / "elsewhere"
    other.mkdir()
    done = run_rawtrio(
        iso,
        *headless(fake_model, "use a tool", "--cwd", str(other), "--output-format", "json"),
        env=KEYS,
    )
    assert done.returncode == 0, done.stderr


def test_max_steps_exits_3(iso: Isolation, fake_model: FakeModel) -> None:
    done = run_rawtrio(
        iso,
        *headless(fake_model, "keep calling tools", "--max-steps", "2", "--output-format", "json"),
        env=KEYS,
    )
    assert done.returncode == 3, done.stderr
    [result] = done.json_lines()
    assert result["outcome"] == "max_steps"
    assert result["steps"] == 2
    assert "max_steps" in done.stderr


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_refused_key_exits_1_saying_so(
    iso: Isolation, fake_model: FakeModel, provider: str
) -> None:
    done = run_rawtrio(iso, *headless(fake_model, "refuse the key", provider=provider), env=KEYS)
    assert done.returncode == 1
    assert (
        f"{provider} refused the API key (401 from {fake_model.url_for(provider)}/" in done.stderr
    )
    assert "Traceback" not in done.stderr


def test_a_provider_error_in_json_output_is_an_error_outcome(
    iso: Isolation, fake_model: FakeModel
) -> None:
    done = run_rawtrio(
        iso, *headless(fake_model, "refuse the key", "--output-format", "json"), env=KEYS
    )
    assert done.returncode == 1
    [result] = done.json_lines()
    assert result["outcome"] == "error"
    assert "refused the API key" in result["reason"]


def test_an_unreachable_endpoint_exits_1(iso: Isolation, tmp_path: Path) -> None:
    # A port nobody listens on: bind one, then close it.
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    done = run_rawtrio(iso, "-p", "say hello", "--base-url", f"http://127.0.0.1:{port}", env=KEYS)
    assert done.returncode == 1
    assert f"could not reach http://127.0.0.1:{port}/v1/messages (" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_retried_request_is_told_on_stderr_and_stdout_keeps_the_answer(
    iso: Isolation, fake_model: FakeModel
) -> None:
    done = run_rawtrio(iso, *headless(fake_model, "overloaded once"), env=KEYS)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Recovered.\n"
    assert "rawtrio: warning: retrying in 20 ms: 529 overloaded, retry 1 of 6\n" in done.stderr


def test_prompt_from_stdin(iso: Isolation, fake_model: FakeModel) -> None:
    done = run_rawtrio(iso, *headless(fake_model, "-"), env=KEYS, stdin="please say hello\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Hello from the fake model.\n"


@pytest.mark.parametrize(
    ("provider", "key_var", "url_var"),
    [
        ("anthropic", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"),
        ("openai-chat", "OPENAI_API_KEY", "OPENAI_BASE_URL"),
        ("openai-responses", "OPENAI_API_KEY", "OPENAI_BASE_URL"),
    ],
)
def test_provider_model_key_and_url_from_the_environment(
    iso: Isolation, fake_model: FakeModel, provider: str, key_var: str, url_var: str
) -> None:
    env = {
        "RAWTRIO_PROVIDER": provider,
        "RAWTRIO_MODEL": "model-from-env",
        key_var: "test-key",
        url_var: fake_model.url_for(provider),
    }
    done = run_rawtrio(iso, "-p", "say hello", "--output-format", "events", env=env)
    assert done.returncode == 0, done.stderr
    events = done.json_lines()
    assert next(e for e in events if e["type"] == "step_started")["model"] == "model-from-env"
    assert events[-1]["final_text"] == "Hello from the fake model."


def test_flags_win_over_the_environment(iso: Isolation, fake_model: FakeModel) -> None:
    env = {
        "RAWTRIO_PROVIDER": "openai-chat",
        "RAWTRIO_MODEL": "model-from-env",
        "ANTHROPIC_API_KEY": "test-key",
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",  # would fail: the flag must win
    }
    done = run_rawtrio(
        iso,
        *headless(fake_model, "say hello", "--output-format", "events"),
        "--model",
        "model-from-flag",
        env=env,
    )
    assert done.returncode == 0, done.stderr
    events = done.json_lines()
    assert next(e for e in events if e["type"] == "step_started")["model"] == "model-from-flag"


def test_a_run_writes_nothing_outside_its_xdg_dirs_and_cwd(
    iso: Isolation, fake_model: FakeModel
) -> None:
    done = run_rawtrio(iso, *headless(fake_model, "use a tool"), env=KEYS)
    assert done.returncode == 0, done.stderr
    xdg_roots = [Path(p) for p in iso.xdg().values()]
    strays = [
        p
        for p in iso.home.rglob("*")
        if p.is_file() and not any(p.is_relative_to(root) for root in xdg_roots)
    ]
    assert strays == []


def test_text_output_puts_each_steps_text_on_a_line_of_its_own(
    iso: Isolation, fake_model: FakeModel
) -> None:
    done = run_rawtrio(iso, *headless(fake_model, "look then answer"), env=KEYS)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Let me look.\nDone.\n"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_failed_turn_prints_its_error_on_stderr_and_nothing_on_stdout(
    iso: Isolation, fake_model: FakeModel, provider: str
) -> None:
    done = run_rawtrio(iso, *headless(fake_model, "refuse the key", provider=provider), env=KEYS)
    assert done.returncode == 1
    assert done.stdout == ""
    assert "rawtrio: error:" in done.stderr


@pytest.mark.parametrize("provider", PROVIDERS)
def test_text_that_is_not_unicode_from_the_model_is_written_as_replacement_characters(
    iso: Isolation, fake_model: FakeModel, provider: str
) -> None:
    prompt = "answer with a lone surrogate"
    text = run_rawtrio(iso, *headless(fake_model, prompt, provider=provider), env=KEYS)
    assert text.stdout == "bad \ufffd text\n", text
    # The turn completed: the reply was stored with U+FFFD in the surrogate's place.
    assert text.returncode == 0, text.stderr
    assert text.stderr == "", text.stderr
    for fmt in ("events", "stream-json", "json"):
        args = headless(fake_model, prompt, "--output-format", fmt, provider=provider)
        done = run_rawtrio(iso, *args, env=KEYS)
        lines = done.json_lines()
        assert lines, done
        assert not has_lone_surrogate(json.dumps(lines, ensure_ascii=False))
        assert lines[-1]["outcome"] == "completed", lines[-1]
        if fmt == "events":  # rawtrio's own event lines
            assert lines[-1]["type"] == "turn_ended"
            deltas = [e["text"] for e in lines if e["type"] == "text_delta"]
            assert "".join(deltas) == "bad \ufffd text"
