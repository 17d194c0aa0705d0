"""The test app's scope routes (SYMFONIC settings): tenants are scopes."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model

from symfonic_django.scopes import ALL_SCOPES, ANSWER_PERMISSION

from .models import Membership, Tenant


def tenant_key(scope: Any) -> str:
    return scope.slug if isinstance(scope, Tenant) else str(scope)


def load_tenant(key: str) -> Tenant | None:
    return Tenant.objects.filter(slug=key).first()


def reviewer_scopes(user: Any) -> Any:
    if user.is_superuser:
        return ALL_SCOPES
    return list(Membership.objects.filter(user=user).values_list("tenant__slug", flat=True))


def reviewer_emails(key: str) -> list[str]:
    """SYMFONIC["NOTIFY"]["REVIEWER_EMAILS"]: the addresses of the tenant's active members who
    may answer its pauses (only they may ever be sent a pause's token)."""
    members = (get_user_model().objects.with_perm(ANSWER_PERMISSION)
               .filter(test_memberships__tenant__slug=key, is_active=True).exclude(email=""))
    return list(members.values_list("email", flat=True))


def request_tenant(request: Any) -> Tenant | None:
    """The tenant a run started over HTTP belongs to: the caller's first membership."""
    membership = Membership.objects.filter(user=request.user).select_related("tenant").first()
    return membership.tenant if membership else None
