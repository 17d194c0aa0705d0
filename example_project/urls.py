from django.contrib import admin
from django.urls import include, path

from symfonic_django.viewer import viewer_urlpatterns

# The admin's index links the reviewers' inbox (/admin/symfonic_django/pause/inbox/).
admin.site.index_template = "admin/symfonic_django/index.html"

urlpatterns = [
    # The live-turn viewer, /admin/symfonic/runs/<id>/live/ (before the admin's catch-all).
    path("admin/symfonic/", include(viewer_urlpatterns)),
    path("admin/", admin.site.urls),
    path("api/symfonic/", include("symfonic_django.api.urls")),
]
