"""Mount with ``path("api/symfonic/", include("symfonic_django.api.urls"))``."""

from django.urls import path
from drf_spectacular.views import SpectacularAPIView
from rest_framework.routers import SimpleRouter

from .views import PauseViewSet, ResumeView, RunViewSet

app_name = "symfonic_api"

router = SimpleRouter()
router.register("pauses", PauseViewSet, basename="pause")
router.register("runs", RunViewSet, basename="run")

urlpatterns = [
    path("resume/", ResumeView.as_view(), name="resume"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    *router.urls,
]
