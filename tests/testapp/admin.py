from django.contrib import admin

from .models import Membership, Refund, Tenant


@admin.register(Tenant)
class TenantAdmin(admin.ModelAdmin):
    list_display = ("slug", "name")


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ("user", "tenant")


@admin.register(Refund)
class RefundAdmin(admin.ModelAdmin):
    list_display = ("order_id", "amount", "run_id", "created_at")
