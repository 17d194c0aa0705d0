"""The fault suite: real processes (PostgreSQL, Redis, Celery workers, daphne) broken on
purpose, each scenario stating its invariant and checking it against the rows.

- ``test_worker_sigkill``: a worker SIGKILLed before its claim, after it, mid-stream, and
  after its refund committed but before the turn ended;
- ``test_connection_terminated``: ``pg_terminate_backend`` of a worker's session during a
  claim and during a stream;
- ``test_live_restarts``: daphne restarted under 50 watchers, Redis restarted mid-turn.

Two scenarios of the same list live beside the other real-process races, in
``tests/integration``: ``test_zombie_worker`` (SIGSTOP/SIGCONT across the lease) and
``test_expiry_race`` (expiry racing answers).
"""
