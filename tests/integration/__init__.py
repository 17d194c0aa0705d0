"""Real-process concurrency and durability tests (PostgreSQL, Redis, Celery workers)."""
