"""The editor's timings as a user sees them, in Debian's chromium at 1440 x 900 against a real
server with its local runner (matmul at its default sizes): the editor's load, click an action
-> the new IR swapped in and settled, the apply request's server time and size, and a benchmark
on the local runner (click Run -> the result arrives). A benchmark, not a test; run it on a
quiet machine (it prints the load average at start and end):

    .venv/bin/python bench/web_browser_timing.py          # BENCH_N=5 benchmarks by default
"""
import os, statistics, sys, tempfile, time
from pathlib import Path
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "browser")); sys.path.insert(0, str(ROOT / "tests"))
from browser_support import Server, CHROMIUM, ARGS, sync_playwright  # noqa: E402

print("load average at start:", " ".join(f"{x:.2f}" for x in os.getloadavg()))

ACTIONS = ["split i by 32", "split j by 16", "split k by 8", "split i by 16", "split j by 32", "split k by 4",
           "interchange i j", "parallelize i", "split i by 8", "split j by 8"]
s = Server(Path(tempfile.mkdtemp()))
loads, clicks, benches, swaps, srv, net, size = [], [], [], [], [], [], []
try:
    s.wait(s.runner_online, 60, "runner")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        ctx = b.new_context(viewport={"width": 1440, "height": 900})
        page = ctx.new_page()
        page.goto(s.url + "/")
        page.click("#kernel-matmul button"); page.wait_for_url("**/s/*/")
        url = page.url
        for _ in range(6):
            page.goto(url + "?step=0")
            loads.append(page.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd"))
        for text in ACTIONS:
            page.goto(url + "?step=0")
            page.wait_for_selector("#actions:not([data-deferred])")
            ms = page.evaluate("""(t) => new Promise(res => {
                const b = document.querySelector(`button.action-item[data-action='${t}']`);
                const t0 = performance.now();
                document.addEventListener('htmx:afterSwap', function g(e) {
                  if (e.detail.target && e.detail.target.id === 'editor') { document.removeEventListener('htmx:afterSwap', g); window.__swap = performance.now() - t0; } });
                document.addEventListener('htmx:afterSettle', function h(e) {
                  if (e.detail.target && e.detail.target.id === 'editor') { document.removeEventListener('htmx:afterSettle', h); res(performance.now() - t0); } });
                b.click(); })""", text)
            clicks.append(ms); swaps.append(page.evaluate("window.__swap"))
            r = page.evaluate("(() => { const e = performance.getEntriesByType('resource').filter(x => x.name.endsWith('/apply')).pop(); return [e.responseStart - e.requestStart, e.responseEnd - e.startTime, e.transferSize]; })()")
            srv.append(r[0]); net.append(r[1]); size.append(r[2] / 1000)
        for k in range(int(os.environ.get('BENCH_N', '5'))):
            page.goto(url + "?step=0")
            page.select_option("#bench-form select", "local")
            n = page.locator("#jobs li[data-state=done]").count()
            t0 = time.perf_counter()
            page.click("#bench-btn")
            page.wait_for_function(f"() => document.querySelectorAll('#jobs li[data-state=done]').length > {n}", timeout=120000)
            benches.append((time.perf_counter() - t0) * 1e3)
        b.close()
finally:
    s.stop()
for name, xs in [(n_, x_) for n_, x_ in (("editor load (loadEventEnd)", loads), ("apply: request->first byte", srv), ("apply: whole response", net), ("apply: response kB", size), ("click action -> new IR swapped", swaps), ("click action -> new IR settled", clicks), ("benchmark on local runner", benches)) if x_]:
    unit = "kB" if name.endswith("kB") else "ms"
    print(f"{name:34s} median {statistics.median(xs):8.1f} {unit}  min {min(xs):8.1f}  max {max(xs):8.1f}  n={len(xs)}  {[round(x) for x in xs]}")
print("load average at end:", " ".join(f"{x:.2f}" for x in os.getloadavg()))
