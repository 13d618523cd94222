"""A key is only ever sent to the endpoint it belongs to (issue 13, item 1).

The real program with the real SDKs against the fake model server: after `rawtrio config
init`, `--provider` / `--base-url` on the command line never send the configured model's
key (or its model id) anywhere else, and a missing key is named by the variable the
chosen provider reads."""

from __future__ import annotations

import json

from rawtrio.testing.fake_model import FakeModelServer
from rawtrio.testing.fake_model.server import RecordedRequest
from tests.headless.support import Isolation, run_rawtrio

ANTHROPIC_KEY = "sk-ant-REAL-ANTHROPIC-KEY-0123456789"
OPENAI_KEY = "local-openai-key-98765"


def config_init(iso: Isolation) -> None:
    done = run_rawtrio(iso, "config", "init")
    assert done.returncode == 0, done


def sent_key(request: RecordedRequest) -> str | None:
    """The key a request carried (`x-api-key`, or a Bearer token)."""
    if "x-api-key" in request.headers:
        return request.headers["x-api-key"]
    return request.headers.get("authorization", "").removeprefix("Bearer ") or None


def every_header_and_body(server: FakeModelServer) -> str:
    return "\n".join(json.dumps([r.headers, r.body]) for r in server.requests)


def test_other_provider_and_base_url_never_get_the_configured_key_or_model(
    iso: Isolation, recorder: FakeModelServer
) -> None:
    config_init(iso)
    done = run_rawtrio(
        iso,
        "-p",
        "say hello",
        "--provider",
        "openai-chat",
        "--base-url",
        recorder.openai_base_url,
        env={"ANTHROPIC_API_KEY": ANTHROPIC_KEY, "OPENAI_API_KEY": OPENAI_KEY},
    )
    assert done.returncode == 0, done
    assert "Hello from the fake model." in done.stdout
    (request,) = recorder.requests
    assert sent_key(request) == OPENAI_KEY
    assert request.body["model"] == "gpt-5"
    assert ANTHROPIC_KEY not in every_header_and_body(recorder)
    assert "claude" not in json.dumps(request.body["model"])
    # The user is told the configured model was set aside, and why.
    assert "not using model 'sonnet'" in done.stderr


def test_without_the_providers_key_the_error_names_its_variable(
    iso: Isolation, recorder: FakeModelServer
) -> None:
    config_init(iso)
    done = run_rawtrio(
        iso,
        "-p",
        "say hello",
        "--provider",
        "openai-chat",
        "--base-url",
        recorder.openai_base_url,
        env={"ANTHROPIC_API_KEY": ANTHROPIC_KEY},
    )
    assert done.returncode == 4, done
    assert "no API key for openai-chat: set OPENAI_API_KEY" in done.stderr
    assert "ANTHROPIC_API_KEY" not in done.stderr
    assert recorder.requests == []


def test_base_url_alone_never_gets_a_key_configured_for_the_default_endpoint(
    iso: Isolation, recorder: FakeModelServer
) -> None:
    configured = "configured-for-api.anthropic.com-4242"
    config = iso.home / ".config" / "rawtrio" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(
        'default_model = "sonnet"\n'
        "[models.sonnet]\n"
        'provider = "anthropic"\n'
        'model_id = "configured-model-id"\n'
        f'api_key = "{configured}"\n'
    )
    done = run_rawtrio(
        iso,
        "-p",
        "say hello",
        "--base-url",
        recorder.base_url,
        env={"ANTHROPIC_API_KEY": ANTHROPIC_KEY},
    )
    assert done.returncode == 0, done
    (request,) = recorder.requests
    # The provider's own variable, which the user pairs with a command-line endpoint (as
    # the SDKs pair it with ANTHROPIC_BASE_URL); never the configured literal.
    assert sent_key(request) == ANTHROPIC_KEY
    assert configured not in every_header_and_body(recorder)
    assert request.body["model"] == "claude-sonnet-4-5"


def test_a_model_configured_for_that_endpoint_is_used_with_its_own_key(
    iso: Isolation, recorder: FakeModelServer
) -> None:
    config_init(iso)
    config = iso.home / ".config" / "rawtrio" / "config.toml"
    config.write_text(
        config.read_text()
        + "\n[models.local]\n"
        + 'provider = "openai-chat"\n'
        + 'model_id = "qwen3-coder"\n'
        + f'base_url = "{recorder.openai_base_url}"\n'
        + 'api_key = "local-model-key-1234"\n'
    )
    done = run_rawtrio(
        iso,
        "-p",
        "say hello",
        "--provider",
        "openai-chat",
        "--base-url",
        recorder.openai_base_url + "/",
        env={"ANTHROPIC_API_KEY": ANTHROPIC_KEY, "OPENAI_API_KEY": OPENAI_KEY},
    )
    assert done.returncode == 0, done
    (request,) = recorder.requests
    assert sent_key(request) == "local-model-key-1234"
    assert request.body["model"] == "qwen3-coder"
    assert ANTHROPIC_KEY not in every_header_and_body(recorder)


def test_a_model_named_explicitly_with_another_endpoint_is_refused(
    iso: Isolation, recorder: FakeModelServer
) -> None:
    config_init(iso)
    done = run_rawtrio(
        iso,
        "-p",
        "say hello",
        "--model",
        "sonnet",
        "--base-url",
        recorder.base_url,
        env={"ANTHROPIC_API_KEY": ANTHROPIC_KEY},
    )
    assert done.returncode == 2, done
    assert "--base-url" in done.stderr
    assert "model 'sonnet' (--model) is anthropic at its default endpoint" in done.stderr
    assert recorder.requests == []
