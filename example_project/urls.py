from django.contrib import admin
from django.urls import include, path

from symfonic_django.viewer import viewer_urlpatterns

urlpatterns = [
    # The live-turn viewer, /admin/symfonic/runs/<id>/live/ (before the admin's catch-all).
    path("admin/symfonic/", include(viewer_urlpatterns)),
    path("admin/", admin.site.urls),
    path("api/symfonic/", include("symfonic_django.api.urls")),
]
