"""The portal's own machinery, watched: whether a worker takes work from each queue, and what is waiting.

Beat sends a heartbeat task to every queue every 30 s; the worker that runs it writes down when it was sent and
when it ran. /healthz and `manage.py workerhealth` (docker-compose's worker healthcheck) read those rows. Deep health
also asks which queues live workers consume (a broadcast), and reads the AWS call outcomes the workers wrote per
endpoint and minute (cloud_calls.py).
"""
