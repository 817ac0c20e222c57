"""evalh's celery worker settings: put this file on each worker's PYTHONPATH (dagster-celery's
worker app, ``-A dagster_celery.app``, reads the module of this name). tests/deploy runs this
very file; docs/deployment.md says how the workers are started.
"""

import os

# The Redis broker every machine of the deployment names ($EVALH_CELERY_BROKER, as `evalh run`
# reads it); the results go back through it too.
broker_url = os.environ["EVALH_CELERY_BROKER"]
result_backend = broker_url

# A step is a long task (a shard runs for minutes): a worker holds only the step it runs.
# Acknowledged late and prefetched one at a time, a busy worker never keeps a second shard
# of the run queued behind its first while another worker is idle.
task_acks_late = True
worker_prefetch_multiplier = 1
