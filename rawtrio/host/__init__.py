"""The warm host: `rawtrio serve` keeps one runtime and one store alive for a user and a
state directory, and front ends attach to it over a private Unix socket speaking ACP
(docs/contracts.md, "The host and attaching").

This package's `paths` and `settings` modules are imported by a front end before it decides
whether to attach, so they import nothing heavy (no trio, no pydantic, no runtime).
"""
