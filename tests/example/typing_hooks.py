"""Checked by mypy in ``make test`` (never run): the example project's hooks fit their protocols.

Each implementation the example's ``SYMFONIC`` names is assigned to a variable
annotated with its ``symfonic_django.hooks`` protocol, so a wrong signature (a
missing parameter, a wrong return type) fails mypy. The package's own defaults
are held to the same protocols.
"""

from __future__ import annotations

from typing import Any

from example_project.shop import approvals, scopes
from symfonic_django import hooks
from symfonic_django import scopes as default_scopes

# The example project's settings (example_project/settings.py, SYMFONIC).
scope_key: hooks.ScopeKey = scopes.tenant_key
scope_loader: hooks.ScopeLoader = scopes.load_tenant
reviewer_scopes: hooks.ReviewerScopes = scopes.reviewer_scopes
request_scope: hooks.RequestScope = scopes.request_tenant
approval_policy: hooks.ApprovalPolicy = approvals.two_approvers_over_500
reviewer_emails: hooks.ReviewerEmails = scopes.reviewer_emails

# The package's defaults.
default_scope_key: hooks.ScopeKey = default_scopes.default_scope_key
default_scope_loader: hooks.ScopeLoader = default_scopes.default_scope_loader
default_scope_for_claims: hooks.ScopeForClaims = default_scopes.scope_for_claims
default_reviewer_scopes: hooks.ReviewerScopes = default_scopes.superusers_see_all


# The example sets no OWNER_GUARD or ADMISSION: these are the shapes the docs show.
async def owner_guard(scope: Any, session_id: str, thread_id: str, resuming: bool) -> None:
    """Raise to refuse."""


async def admission(scope: Any, claims: Any) -> hooks.AdmittedPlan | None:
    return hooks.AdmittedPlan(prepared_plan={"scope": str(scope)})


def sync_admission(scope: Any, claims: Any) -> hooks.AdmittedPlan | None:
    return None


guard: hooks.OwnerGuard = owner_guard
admit: hooks.Admission = admission
admit_sync: hooks.Admission = sync_admission
