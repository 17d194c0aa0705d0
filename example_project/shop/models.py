from django.conf import settings
from django.db import models


class Tenant(models.Model):
    """The example's scope: every run and pause belongs to one tenant."""

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
                             related_name="memberships")
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="memberships")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "tenant"], name="shop_one_membership")]

    def __str__(self) -> str:
        return f"{self.user} in {self.tenant}"


class Refund(models.Model):
    """The refund agent's side effect. One per run: counting rows shows it happened once."""

    order_id = models.CharField(max_length=100)
    amount = models.DecimalField(max_digits=12, decimal_places=2)
    run_id = models.UUIDField(unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"refund {self.amount} on {self.order_id}"
