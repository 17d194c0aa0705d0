"""``manage.py seed_demo --json``: tenants, reviewers and pending refund pauses.

Creates tenants ``acme`` and ``globex``; users ``admin`` (superuser), ``alice``
(of acme) and ``bob`` (of globex), who may each start runs and read and answer
pauses in their own tenant, each with a password and a
DRF token; and pending approval pauses from the refund agent (``--pauses N``
in acme, one in globex). The agent's first turn runs in this process.
"""

from __future__ import annotations

import json
import random

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.management.base import BaseCommand
from rest_framework.authtoken.models import Token

from example_project.shop.models import Membership, Tenant
from symfonic_django.hitl import question_text
from symfonic_django.models import Pause, PauseStatus
from symfonic_django.pauses import token_for
from symfonic_django.runs import start_run
from symfonic_django.turns import execute_run
from symfonic_django.viewer import viewer_url

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
    # alice and bob may start runs (POST runs/), read their tenant's pauses, runs and
    # events (view_pause, view_run and the other view_ permissions: reading needs them,
    # membership alone is not enough) and answer its pauses (answer_pause). Membership
    # (REVIEWER_SCOPES) keeps each to its own tenant.
    may_act = Permission.objects.filter(content_type__app_label="symfonic_django",
                                        codename__in=("answer_pause", "start_run"))
    view_perms = Permission.objects.filter(
        content_type__app_label="symfonic_django", codename__startswith="view_")
    out = {}
    for name, spec in USERS.items():
        user, _ = User.objects.get_or_create(username=name)
        user.is_staff = True
        user.is_superuser = spec["superuser"]
        # So the demo's reviewers get the "a pause waits for you" email (printed to the
        # console in the demo: docs/notifications.md).
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
    order = f"{tenant.slug.upper()}-{rng.randint(1000, 9999)}"
    given = {"order_id": order}
    if agent in ("refund", "slow_refund"):
        given["amount"] = amount if amount is not None else rng.choice([12.5, 40, 99.99])
    run = start_run(agent, given, scope=tenant, dispatch=False)
    execute_run(run.pk)
    pause = Pause.objects.get(run=run, status=PauseStatus.PENDING)
    return {"id": str(pause.pk), "token": token_for(pause), "tenant": tenant.slug,
            "run_id": str(run.pk)}


def describe(pause_id: str) -> str:
    """What a seeded pause asks, for the demo's printout."""
    pause = Pause.objects.get(pk=pause_id)
    if pause.kind == "question":
        return f"question: {question_text(pause.prompt)}"
    text = "; ".join(a.get("description") or a["name"] for a in pause.prompt["action_requests"])
    needs = f", needs {pause.approvals_needed} approvers" if pause.approvals_needed > 1 else ""
    return f"approval: {text}{needs}"


class Command(BaseCommand):
    help = "Create demo tenants, users and pending refund approvals."

    def add_arguments(self, parser):
        parser.add_argument("--pauses", type=int, default=3, help="pending pauses in acme")
        parser.add_argument("--json", action="store_true", help="print the result as JSON")
        parser.add_argument("--showcase", action="store_true",
                            help="also a question pause, a refund over 500 that needs two "
                                 "approvers and a slow_refund whose continuation streams over "
                                 "seconds (approve it and watch), in acme (make demo)")

    def handle(self, *args, pauses: int, json: bool, showcase: bool, **options):
        users = seed_users()
        rng = random.Random()
        acme, globex = Tenant.objects.get(slug="acme"), Tenant.objects.get(slug="globex")
        seeded = [seed_pause(acme, rng) for _ in range(pauses)] + [seed_pause(globex, rng)]
        to_watch = None  # the pause to approve and watch: its continuation streams for seconds
        if showcase:
            seeded += [seed_pause(acme, rng, agent="shipping"),
                       seed_pause(acme, rng, amount=750)]
            to_watch = seed_pause(acme, rng, agent="slow_refund", amount=42)
            seeded.append(to_watch)
        result = {"users": users, "pauses": seeded}
        if json:
            self.stdout.write(_json.dumps(result))
        else:
            for name, creds in users.items():
                self.stdout.write(f"user {name} / {creds['password']}  token {creds['token']}")
            for p in seeded:
                self.stdout.write(f"pending pause {p['id']} ({p['tenant']}; {describe(p['id'])})")
                if p is to_watch:
                    self.stdout.write("  slow_refund: approve it and the admin shows its "
                                      "continuation streaming in the live viewer, "
                                      f"{viewer_url(p['run_id'])}")


_json = json
