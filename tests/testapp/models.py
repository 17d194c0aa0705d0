"""The test app's models: tenants (its scopes), who reviews them, and the refunds its
agents record (their side effect, counted by the tests)."""

from django.conf import settings
from django.db import models


class Tenant(models.Model):
    """The test app's scope: every run and pause belongs to one tenant."""

    slug = models.SlugField(unique=True)
    name = models.CharField(max_length=100)

    def __str__(self) -> str:
        return self.name

    @property
    def scope_key(self) -> str:
        return self.slug


class Membership(models.Model):
    """Which tenants a reviewer may review."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="test_memberships")
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="memberships")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "tenant"], name="testapp_one_membership")]

    def __str__(self) -> str:
        return f"{self.user} in {self.tenant}"


class Refund(models.Model):
    """The refund agents' side effect: one per run and order id, so counting rows shows
    each approved refund happened once.

    ``run_id`` is the run that records it: the plain ``refund`` agent's continuation
    (one refund per run), or the root run of a ``refund_graph`` conversation (one per
    order it approves; see ``tests.testapp.graph_agent``).
    """

    order_id = models.CharField(max_length=100)
    amount = models.DecimalField(max_digits=12, decimal_places=2)
    run_id = models.UUIDField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        # Also the index of run_id, its first column: the tests and the demo count by run.
        constraints = [models.UniqueConstraint(fields=["run_id", "order_id"],
                                               name="testapp_one_refund_per_run_and_order")]

    def __str__(self) -> str:
        return f"refund {self.amount} on {self.order_id}"
