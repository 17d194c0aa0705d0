from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView

from example_project.shop.views import agui_page
from symfonic_django.viewer import viewer_urlpatterns

# The admin's index links the reviewers' inbox (/admin/symfonic_django/pause/inbox/).
admin.site.index_template = "admin/symfonic_django/index.html"

urlpatterns = [
    # The site is the reviewers' inbox: `/`, and so the admin's "View site" (its site_url,
    # "/"), lead there. Not permanent: a browser must not remember where a project's home is.
    path("", RedirectView.as_view(pattern_name="admin:symfonic_django_pause_inbox"),
         name="home"),
    # The live-turn viewer, /admin/symfonic/runs/<id>/live/ (before the admin's catch-all).
    path("admin/symfonic/", include(viewer_urlpatterns)),
    path("admin/", admin.site.urls),
    path("api/symfonic/", include("symfonic_django.api.urls")),
    # A page of the example's own that speaks AG-UI (@ag-ui/client) to the endpoint above.
    path("agui/", agui_page, name="agui"),
]
