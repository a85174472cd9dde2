"""The backend's server, the same in native and compose mode (design: the server decides whether
the defects exist). One gthread worker: each request runs in a thread, and Flask gives each
async view its own event loop there -- so create_task work is cancelled with the view's loop and
a module-global asyncio client meets a new loop on every request, as in the incident."""

worker_class = "gthread"
workers = 1
threads = 64  # headroom: shared_loop_client can leave requests hung on a dead loop's lock
timeout = 60
graceful_timeout = 5
accesslog = "-"
# No control socket: gunicorn's default puts one in ~/.gunicorn, shared by every gunicorn of the
# user (the lab's stack, an investigation, the tests) and left outside the lab's folders.
control_socket_disable = True
