"""The example's AG-UI page: a front end of its own on the app's ``ag-ui/{agent}/`` endpoint.

The page is a template and one static script (``static/shop/agui.js``, bundled once with
esbuild from ``frontend/agui.src.js`` and committed: ``frontend/package.json`` says how to
rebuild it). It signs nothing and holds no token: the reviewer's session and its CSRF
token are the credentials, as for the rest of the API.
"""

from django.conf import settings
from django.contrib.admin.views.decorators import staff_member_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.csrf import ensure_csrf_cookie

#: The example's agents the page offers, the LangGraph one first when it is installed.
PAGE_AGENTS = ("refund_graph", "refund")


@staff_member_required
@ensure_csrf_cookie
def agui_page(request: HttpRequest) -> HttpResponse:
    agents = [name for name in PAGE_AGENTS if name in settings.SYMFONIC["AGENTS"]]
    return render(request, "shop/agui.html", {"agents": agents, "api": "/api/symfonic/"})
