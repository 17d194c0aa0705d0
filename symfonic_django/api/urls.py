"""Mount with ``path("api/symfonic/", include("symfonic_django.api.urls"))``.

``schema/`` is the OpenAPI document; ``schema/swagger-ui/`` and ``schema/redoc/``
render it. Both pages load their scripts from ``drf_spectacular_sidecar``'s
static files (``SPECTACULAR_SETTINGS`` ``SWAGGER_UI_DIST`` and ``REDOC_DIST``
set to ``"SIDECAR"``), never from a CDN, so they work offline and behind a
strict firewall.

``ag-ui/{agent}/`` speaks AG-UI (``agui``, ``docs/ag-ui.md``).

Any other path under the mount (``pauses/0.5/x/``, ``nothing/``) is the pinned
JSON 404 ``{"code": "not_found", ...}``, never Django's HTML page.
"""

from django.urls import path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView
from rest_framework.routers import SimpleRouter

from .agui import AgUiView
from .views import PauseViewSet, ResumeView, RunViewSet, not_found

app_name = "symfonic_api"

router = SimpleRouter()
router.register("pauses", PauseViewSet, basename="pause")
router.register("runs", RunViewSet, basename="run")

urlpatterns = [
    path("resume/", ResumeView.as_view(), name="resume"),
    # AG-UI 1.0 (docs/ag-ui.md): a RunAgentInput in, a server-sent event stream out.
    path("ag-ui/<str:agent>/", AgUiView.as_view(), name="ag-ui"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("schema/swagger-ui/",
         SpectacularSwaggerView.as_view(url_name=f"{app_name}:schema"), name="swagger-ui"),
    # drf-spectacular's Redoc page, without the Google Fonts it links: nothing from a CDN.
    path("schema/redoc/",
         SpectacularRedocView.as_view(url_name=f"{app_name}:schema",
                                      template_name="symfonic_django/api/redoc.html"),
         name="redoc"),
    *router.urls,
    # Last: whatever the routes above do not name. Only paths ending in a slash, so
    # APPEND_SLASH still sends "pauses" on to "pauses/".
    re_path(r"^(?:.*/)?$", not_found, name="not_found"),
]
