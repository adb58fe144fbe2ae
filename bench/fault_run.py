"""Fault run on PostgreSQL + Redis (a benchmark of robustness, not a test): 30 jobs, two
runners; kill -9 of a runner mid-job, Redis restarted, web server restarted; count the jobs
done / lost / stuck / done twice.

    python bench/fault_run.py        # needs PostgreSQL on 127.0.0.1:5432 and redis-server

It starts its own Redis on port 6390 and a fresh PostgreSQL database (dropped at the end).
"""
import json, os, signal, subprocess, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import pgsupport
from live_server import http, ROOT, free_port

T = tempfile.mkdtemp(prefix="dojo-fault-")
RPORT = 6390
def redis_start():
    subprocess.run(["redis-server", "--bind", "127.0.0.1", "--port", str(RPORT), "--save", "", "--appendonly", "no",
                    "--daemonize", "yes", "--dir", T, "--logfile", f"{T}/redis.log", "--pidfile", f"{T}/redis.pid"], check=True)
    for _ in range(100):
        if subprocess.run(["redis-cli", "-p", str(RPORT), "ping"], capture_output=True, text=True).stdout.strip() == "PONG":
            return
        time.sleep(0.05)
def redis_stop():
    subprocess.run(["redis-cli", "-p", str(RPORT), "shutdown", "nosave"], capture_output=True)
    time.sleep(0.5)

redis_start()
db_url, drop = pgsupport.new_database("perfdojo_fault_")
port = free_port(); url = f"http://127.0.0.1:{port}"
env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "DATABASE_URL")}
env.update({"DOJO_STATE_DIR": f"{T}/state", "PYTHONPATH": str(ROOT), "REDIS_URL": f"redis://127.0.0.1:{RPORT}/0",
            "DATABASE_URL": db_url, "DOJO_RUNNER_HEARTBEAT": "1", "DOJO_RUNNER_OFFLINE_AFTER": "6",
            "DOJO_REAPER_INTERVAL": "1", "DOJO_REDISPATCH_AFTER": "10", "DOJO_CACHE_DIR": f"{T}/cache",
            "DOJO_AGENTS_WORKER": "0", "DOJO_RATE_WRITES_PER_MIN": "100000", "DOJO_JOB_QUOTA_ACTIVE": "100"})
procs = {}
def start_web():
    log = open(f"{T}/web.log", "ab")
    p = subprocess.Popen([sys.executable, "-m", "webapp.launch", "--port", str(port), "--no-runner"], cwd=ROOT,
                         env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    for _ in range(600):
        try:
            if http("GET", url + "/api/runners")[0] == 200: return p
        except OSError: pass
        time.sleep(0.1)
    raise SystemExit("web did not start")
def start_runner(name, token):
    log = open(f"{T}/runner-{name}.log", "ab")
    procs[name] = subprocess.Popen([sys.executable, "-m", "runners", "--server", url, "--token", token, "--name", name,
        "--labels", "pool", "--state-dir", f"{T}/runner-{name}", "--grace", "5"], cwd=ROOT, env=env,
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
def runners():
    return {r["name"]: r for r in http("GET", url + "/api/runners")[1]["runners"]}
def wait(cond, timeout, what):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            if cond(): return
        except OSError: pass
        time.sleep(0.3)
    raise SystemExit(f"timeout: {what}")

t0 = time.monotonic()
web = start_web()
token = subprocess.run([sys.executable, "manage.py", "make_runner_token", "--uses", "3"], cwd=ROOT, env=env,
                       capture_output=True, text=True, check=True).stdout.strip()
start_runner("ra", token); start_runner("rb", token)
wait(lambda: all(runners().get(n, {}).get("online") for n in ("ra", "rb")), 90, "runners online")
owner = http("POST", url + "/api/sessions", {"kernel": "relu"})[1]["owner_token"]
ids = []
for i in range(30):
    st, ans = http("POST", url + "/api/jobs", {"kernel": "matmul", "sizes": {"N": 32, "M": 32, "K": 32},
              "options": {"min_time": 0.4, "threads": 1, "timeout_s": 60}}, token=owner)
    assert st == 201, ans
    ids.append(ans["job"])
def states():
    return [http("GET", f"{url}/api/jobs/{i}")[1]["state"] for i in ids]
# 1. kill -9 a runner mid-job
wait(lambda: runners()["rb"]["status"] == "busy", 60, "rb busy")
time.sleep(0.3)
os.killpg(procs["rb"].pid, signal.SIGKILL); procs["rb"].wait()
print(f"{time.monotonic()-t0:6.1f}s killed rb mid-job; states {dict((s, states().count(s)) for s in set(states()))}", flush=True)
# 2. restart Redis
time.sleep(3)
redis_stop(); time.sleep(2); redis_start()
print(f"{time.monotonic()-t0:6.1f}s Redis restarted (its queues lost)", flush=True)
# 3. restart the web server
time.sleep(3)
web.send_signal(signal.SIGTERM); web.wait(timeout=30)
web = start_web()
print(f"{time.monotonic()-t0:6.1f}s web server restarted", flush=True)
# a runner rejoins under the killed one's name (it has its stored secret)
start_runner("rb", token)
try:
    wait(lambda: all(s in ("done", "failed", "lost", "cancelled") for s in states()), 600, "all jobs final")
except SystemExit as e:
    print(e)
final = states()
print(f"{time.monotonic()-t0:6.1f}s jobs: " + ", ".join(f"{s} {final.count(s)}" for s in sorted(set(final))))
out = subprocess.run([sys.executable, "manage.py", "shell", "-c",
    "from webapp.runners.models import Job; import json; print(json.dumps([[j.id, j.attempts, [e['event'] for e in j.events]] for j in Job.objects.order_by('id')]))"],
    cwd=ROOT, env=env, capture_output=True, text=True)
rows = json.loads(out.stdout.strip().splitlines()[-1])
dups = [r for r in rows if r[2].count("done") > 1]
print("requeued:", sum(r[2].count("requeued") for r in rows), "reassigned:", sum(r[2].count("reassigned") for r in rows),
      "redispatched:", sum(r[2].count("redispatched") for r in rows), "done twice:", len(dups),
      "max attempts:", max(r[1] for r in rows))
print("runners:", {n: (r["status"], r["sandbox"].get("process_limit_enforced")) for n, r in runners().items()})
for p in procs.values():
    p.terminate()
for p in procs.values():
    try: p.wait(timeout=20)
    except subprocess.TimeoutExpired: os.killpg(p.pid, signal.SIGKILL)
web.send_signal(signal.SIGTERM); web.wait(timeout=30)
redis_stop(); drop()
