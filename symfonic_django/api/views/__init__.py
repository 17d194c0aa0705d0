"""The HTTP API's views, one module per group of endpoints (``urls.py`` routes them).

``base`` holds what every view shares (the error body, the size cap, the 202),
``pauses`` the ``pauses/`` endpoints, ``resume`` the ``resume/`` one, ``runs``
the ``runs/`` ones; ``schema`` and ``pagination`` what they declare and page.
"""

from .base import not_found
from .pauses import PauseViewSet
from .resume import ResumeView
from .runs import RunViewSet

__all__ = ["PauseViewSet", "ResumeView", "RunViewSet", "not_found"]
