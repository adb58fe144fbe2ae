"""GET /api/runners median latency on a live server, without and with a checker attack
(anonymous POST /api/sessions of a source over the checker's budget, in a loop).

    python -m webapp.launch --no-runner --port 8010 &
    python bench/check_attack_latency.py http://127.0.0.1:8010 [ATTACKERS]
"""
import json, statistics, sys, threading, time, urllib.request, urllib.error
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "web"))
from test_security import costly_source
URL = sys.argv[1]
ATTACKERS = int(sys.argv[2]) if len(sys.argv) > 2 else 1

def get_ms():
    t = time.perf_counter()
    with urllib.request.urlopen(URL + "/api/runners", timeout=60) as r:
        r.read()
    return (time.perf_counter() - t) * 1000

def measure(n=40):
    out = []
    for _ in range(n):
        out.append(get_ms()); time.sleep(0.05)
    return statistics.median(out), max(out)

stop = threading.Event(); answers = []
def attack():
    body = json.dumps({"source": costly_source()}).encode()
    while not stop.is_set():
        t = time.perf_counter()
        req = urllib.request.Request(URL + "/api/sessions", data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
        try:
            urllib.request.urlopen(req, timeout=60).read(); code = 201
        except urllib.error.HTTPError as e:
            code = e.code; e.read()
        answers.append((code, time.perf_counter() - t))

base = measure()
threads = [threading.Thread(target=attack) for _ in range(ATTACKERS)]
for t in threads: t.start()
time.sleep(1.0)
during = measure()
stop.set()
for t in threads: t.join()
codes = sorted({c for c, _ in answers})
print(f"GET /api/runners median/max ms: without {base[0]:.1f}/{base[1]:.1f}; "
      f"with {ATTACKERS} attacker(s) {during[0]:.1f}/{during[1]:.1f}; attack answers {codes}, "
      f"{len(answers)} requests, longest {max(s for _, s in answers):.2f} s")
