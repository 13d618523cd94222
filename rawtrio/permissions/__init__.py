"""Permission rules, modes and approval (docs/configuration.md).

Rules and approval decide which handlers run; they are not a sandbox: rawtrio runs with
the permissions of the account that started it.
"""

from __future__ import annotations

from rawtrio.permissions.approval import (
    AlwaysScope,
    ApprovalAlreadyResolved,
    ApprovalBroker,
    ApprovalDecision,
    ApprovalError,
    ApprovalKind,
    ApprovalRequest,
    UnknownApprovalRequest,
)
from rawtrio.permissions.policy import (
    PermissionPolicy,
    allow_rule_for,
    exact_regex,
    rules_from_config,
    with_hook_permission,
)
from rawtrio.permissions.rules import (
    EDIT_TOOLS,
    Decision,
    Effect,
    PermissionMode,
    Rule,
    When,
    argument_values,
    evaluate,
    hidden_tools,
    make_rule,
)
from rawtrio.permissions.summary import summarize_call

__all__ = [
    "EDIT_TOOLS",
    "AlwaysScope",
    "ApprovalAlreadyResolved",
    "ApprovalBroker",
    "ApprovalDecision",
    "ApprovalError",
    "ApprovalKind",
    "ApprovalRequest",
    "Decision",
    "Effect",
    "PermissionMode",
    "PermissionPolicy",
    "Rule",
    "UnknownApprovalRequest",
    "When",
    "allow_rule_for",
    "argument_values",
    "evaluate",
    "exact_regex",
    "hidden_tools",
    "make_rule",
    "rules_from_config",
    "summarize_call",
    "with_hook_permission",
]
