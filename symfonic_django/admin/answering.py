"""The pause page: the review (``review.present_review``) and its answer form, posted
through ``pauses.answer_pause``; a refusal is shown in the exception's words."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from .. import pauses
from ..exceptions import NotFound, SymfonicError
from ..forms import answer_form_for
from ..models import AnsweredVia, Pause, PauseStatus
from ..viewer import viewer_url
from .base import ReviewerAdmin, visible_scopes
from .review import present_review


def _form_errors(form: Any) -> list[str]:
    """Every error of ``form`` as a sentence that names what it is about."""
    words = []
    for name, errors in form.errors.items():
        field = form.fields.get(name)
        subject = getattr(field, "subject", None) or (field.label if field else "")
        for error in errors:
            words.append(error if not subject or subject in error else f"{subject}: {error}")
    return words


def _answered_message(resolution: pauses.Resolution) -> str:
    pause = resolution.pause
    if resolution.approvals is not None:
        approvals = resolution.approvals
        more = approvals.need - approvals.have
        return ngettext("Your approval was counted: %(have)d of %(need)d approvals (%(by)s); "
                        "the run continues once %(more)d more reviewer approves.",
                        "Your approval was counted: %(have)d of %(need)d approvals (%(by)s); "
                        "the run continues once %(more)d more reviewers approve.", more) % {
            "have": approvals.have, "need": approvals.need, "by": ", ".join(approvals.by),
            "more": more}
    if resolution.continuation is not None:
        return _("Your answer was recorded; the agent continues in run %(id)s.") % {
            "id": str(resolution.continuation.pk)[:8]}
    pending = Pause.objects.filter(run_id=pause.run_id, status=PauseStatus.PENDING).count()
    if pending:
        return ngettext("Your answer was recorded; the run continues once its other "
                        "%(count)d pending pause are answered.",
                        "Your answer was recorded; the run continues once its other "
                        "%(count)d pending pauses are answered.", pending) % {"count": pending}
    return _("Your answer was recorded.")


class PauseAnswering(ReviewerAdmin):
    """The pause admin's change page: the review page, and answering on it."""

    review_template = "admin/symfonic_django/pause/review.html"

    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "",
                    extra_context: dict[str, Any] | None = None) -> HttpResponse:
        """The pause page: the prompt, the answer form, the decision and its history."""
        pause = self.get_object(request, object_id)
        if not self.has_view_permission(request, pause):
            raise PermissionDenied
        can_answer = self.has_answer_permission(request)
        form = None
        if request.method == "POST":
            if not can_answer:
                raise PermissionDenied
            form = answer_form_for(pause, data=request.POST, reviewer=request.user)
            if form.is_valid():
                return self._answer(request, pause, form)
            messages.error(request, format_html(
                _("The answer was not sent: {}"), " ".join(_form_errors(form))))
        elif pause.is_pending and can_answer and pause.expires_at > timezone.now():
            form = answer_form_for(pause, reviewer=request.user)
        return self._render_review(request, pause, form, can_answer, extra_context)

    def _answer(self, request: HttpRequest, pause: Pause, form: Any) -> HttpResponse:
        page = reverse("admin:symfonic_django_pause_change", args=[pause.pk])
        try:
            resolution = pauses.answer_pause(
                pause.pk, form.answer, actor=request.user, via=AnsweredVia.ADMIN,
                visible=visible_scopes(request), comment=form.comment)
        except NotFound as exc:
            raise Http404(exc.detail) from None
        except SymfonicError as exc:
            messages.error(request, exc.detail)
            pause.refresh_from_db()
            if not pause.is_pending:
                return HttpResponseRedirect(page)  # show who answered it, and when
            return self._render_review(request, pause, form, True, None)
        messages.success(request, _answered_message(resolution))
        return HttpResponseRedirect(viewer_url(resolution.continuation) or page)

    def _render_review(self, request: HttpRequest, pause: Pause, form: Any, can_answer: bool,
                       extra_context: dict[str, Any] | None) -> TemplateResponse:
        pause = (Pause.objects.select_related("run", "answered_by", "continuation")
                 .get(pk=pause.pk))
        if not pause.is_pending:
            form = None  # a closed pause shows its decision, never a form
        review = present_review(request, pause, form)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "app_label": self.opts.app_label,
            "original": pause,
            "pause": pause,
            "title": review.title,
            "subtitle": review.subtitle,
            "review": review,
            "form": form,
            "can_answer": can_answer,
            "media": self.media + form.media if form is not None else self.media,
            "has_view_permission": True,
            **(extra_context or {}),
        }
        request.current_app = self.admin_site.name
        return TemplateResponse(request, self.review_template, context)
