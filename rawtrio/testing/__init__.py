"""Reusable fakes for testing rawtrio and code built on it.

`rawtrio.testing.fake_model` is a loopback HTTP server speaking the Anthropic Messages and
OpenAI Chat Completions / Responses wire formats, scripted per test (docs/stress.md).
"""
