"""Tenants, reviewers and pending refund pauses for the tests, as the example's
``seed_demo`` makes them: tenants ``acme`` and ``globex``; users ``admin``
(superuser), ``alice`` (of acme) and ``bob`` (of globex), each with a password and a DRF
token, who may start runs and read and answer pauses in their own tenant."""

from __future__ import annotations

import random

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from rest_framework.authtoken.models import Token

from symfonic_django.models import Pause, PauseStatus
from symfonic_django.pauses import token_for
from symfonic_django.runs import start_run
from symfonic_django.turns import execute_run

from .models import Membership, Tenant

USERS = {
    "admin": {"password": "admin-demo-pw", "tenant": None, "superuser": True},
    "alice": {"password": "alice-demo-pw", "tenant": "acme", "superuser": False},
    "bob": {"password": "bob-demo-pw", "tenant": "globex", "superuser": False},
}
TENANTS = {"acme": "Acme Corp", "globex": "Globex Inc"}


def seed_users() -> dict[str, dict[str, str]]:
    User = get_user_model()
    tenants = {slug: Tenant.objects.get_or_create(slug=slug, defaults={"name": name})[0]
               for slug, name in TENANTS.items()}
    # alice and bob may start runs, read their tenant's pauses, runs and events (the view_
    # permissions) and answer its pauses; Membership (REVIEWER_SCOPES) keeps each to its own.
    may_act = Permission.objects.filter(content_type__app_label="symfonic_django",
                                        codename__in=("answer_pause", "start_run"))
    view_perms = Permission.objects.filter(
        content_type__app_label="symfonic_django", codename__startswith="view_")
    out = {}
    for name, spec in USERS.items():
        user, _ = User.objects.get_or_create(username=name)
        user.is_staff = True
        user.is_superuser = spec["superuser"]
        user.email = f"{name}@example.com"
        user.set_password(spec["password"])
        user.save()
        user.user_permissions.add(*may_act, *view_perms)
        if spec["tenant"]:
            Membership.objects.get_or_create(user=user, tenant=tenants[spec["tenant"]])
        token, _ = Token.objects.get_or_create(user=user)
        out[name] = {"password": spec["password"], "token": token.key}
    return out


def seed_pause(tenant: Tenant, rng: random.Random, *, agent: str = "refund",
               amount: float | None = None) -> dict[str, str]:
    """A pending pause of ``agent`` (a refund by default) in ``tenant``, its first turn run
    in this process."""
    order = f"{tenant.slug.upper()}-{rng.randint(1000, 9999)}"
    given = {"order_id": order}
    if agent in ("refund", "slow_refund"):
        given["amount"] = amount if amount is not None else rng.choice([12.5, 40, 99.99])
    run = start_run(agent, given, scope=tenant, dispatch=False)
    execute_run(run.pk)
    pause = Pause.objects.get(run=run, status=PauseStatus.PENDING)
    return {"id": str(pause.pk), "token": token_for(pause), "tenant": tenant.slug,
            "run_id": str(run.pk)}
