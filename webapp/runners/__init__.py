"""The runner registry and job dispatch (DESIGN.md section 6).

Models: Runner, RegistrationToken, Job.  ``services`` is the Python interface
(submit_benchmark, job_dict, cancel, the runner protocol), ``views`` the HTTP
one, ``reaper`` requeues the jobs of dead runners, ``dispatch`` publishes job
ids to the runners' Celery queues.
"""
