"""Review claims on the pause page.

"Being reviewed by alice (until 07:40:00 UTC)": the pause page shows a live claim
(pause/claim.html) and, to reviewers who may answer, a Claim / Release button that
posts here. A claim informs; it refuses nobody's answer (``pauses.claim``).
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import path, reverse
from django.utils.translation import gettext as _

from .. import pauses
from ..datetimes import format_datetime
from ..exceptions import NotFound, SymfonicError
from ..models import AnsweredVia
from .base import ReviewerAdmin, visible_scopes


class PauseClaims(ReviewerAdmin):
    """The pause admin's ``<id>/claim/`` and ``<id>/release/`` views."""

    def claim_urls(self) -> list[Any]:
        name = f"{self.opts.app_label}_{self.opts.model_name}"
        view = self.admin_site.admin_view(self.claim_view)
        return [path("<path:object_id>/claim/", view, name=f"{name}_claim"),
                path("<path:object_id>/release/", view, {"release": True},
                     name=f"{name}_release")]

    def claim_view(self, request: HttpRequest, object_id: str, release: bool = False
                   ) -> HttpResponse:
        """Claim the pause for the reviewer, or release their claim; then back to its page.

        POST only, CSRF-protected (``admin_view``); a pause of a scope the reviewer
        cannot see is a 404, a reviewer without the answer permission a 403, and a
        refusal (``ClaimHeld``, ``ClaimNotHeld``, a closed pause) its words on the page.
        """
        if request.method != "POST":
            return HttpResponse(status=405, headers={"Allow": "POST"})
        pause = self.get_object(request, object_id)
        if not (self.has_view_permission(request, pause) and self.has_answer_permission(request)):
            raise PermissionDenied
        transition = pauses.release if release else pauses.claim
        try:
            held = transition(pause.pk, actor=request.user, via=AnsweredVia.ADMIN,
                              visible=visible_scopes(request))
        except NotFound as exc:
            raise Http404(exc.detail) from None
        except SymfonicError as exc:
            messages.error(request, exc.detail)
        else:
            until = format_datetime(held.claimed_until, "time")
            messages.success(request, _("You released this pause.") if release else
                             _("You are reviewing this pause until %(until)s: other reviewers "
                               "see it (they can still answer it).") % {"until": until})
        return HttpResponseRedirect(reverse("admin:symfonic_django_pause_change",
                                            args=[pause.pk]))
