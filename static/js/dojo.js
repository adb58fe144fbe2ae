/* PerfDojo editor: keyboard shortcuts and small conveniences. Everything here is optional:
   the pages work without JavaScript (links and forms), htmx makes them incremental. */
(function () {
  "use strict";

  function editor() { return document.getElementById("editor"); }
  function typing(el) {
    return el && (el.tagName === "INPUT" || el.tagName === "TEXTAREA" || el.tagName === "SELECT" || el.isContentEditable);
  }
  function actionItems() { return Array.prototype.slice.call(document.querySelectorAll("#actions .action-item")); }
  function click(sel) {
    var el = typeof sel === "string" ? document.querySelector(sel) : sel;
    if (el && !el.disabled) { el.click(); return true; }
    return false;
  }

  var selected = -1;
  function select(i) {
    var items = actionItems();
    if (!items.length) return;
    selected = (i + items.length) % items.length;
    items.forEach(function (el, k) { el.classList.toggle("kbd-selected", k === selected); });
    items[selected].focus();
    items[selected].scrollIntoView({ block: "nearest" });
  }

  document.addEventListener("keydown", function (ev) {
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (typing(ev.target)) {
      if (ev.key === "Escape") ev.target.blur();
      return;
    }
    if (!editor()) return;
    switch (ev.key) {
      case "j": select(selected + 1); break;
      case "k": select(selected < 0 ? -1 : selected - 1); break;
      case "Enter": {
        var items = actionItems();
        if (document.activeElement && document.activeElement.classList.contains("action-item")) return; // native
        if (selected >= 0 && items[selected]) { click(items[selected]); break; }
        return;
      }
      case "u": if (!click("#undo-btn")) return; break;
      case "[": if (!click("#parent-link")) return; break;
      case "]": if (!click("#code .child-link")) return; break;
      case "/": { var f = document.getElementById("free-action"); if (!f) return; f.focus(); break; }
      case "f": if (!click("#fork-btn")) return; break;
      case "d": if (!click("#diff .tab[id^=mode-]:not(.active)")) return; break;
      case "?": document.getElementById("keys") && document.getElementById("keys").classList.toggle("show"); break;
      default: return;
    }
    ev.preventDefault();
  });

  // a clicked IR line stays highlighted while its actions are shown
  document.addEventListener("click", function (ev) {
    var line = ev.target.closest && ev.target.closest("#ir .line.clickable");
    if (!line) return;
    document.querySelectorAll("#ir .line.selected").forEach(function (el) { el.classList.remove("selected"); });
    line.classList.add("selected");
  });

  // after an apply/undo the new diff keeps the tab (IR, C, CUDA) and mode the player had chosen
  document.addEventListener("htmx:configRequest", function (ev) {
    var d = document.getElementById("diff");
    if (!d) return;
    var t = ev.detail.target;
    if ((t && t.id === "editor") || /\/(apply|undo|goto)$/.test(ev.detail.path)) {
      ev.detail.parameters["code"] = d.getAttribute("data-code") || "ir";
      ev.detail.parameters["diff"] = d.getAttribute("data-mode") || "split";
    }
  });

  // the deferred "legal actions" panel loads itself once; once the player asked for another
  // panel (a click on an IR line: hx-sync also aborts the load), that panel wins and the
  // deferred answer, whenever it comes, is dropped
  document.addEventListener("htmx:beforeRequest", function (ev) {
    var t = ev.detail && ev.detail.target, src = ev.detail && ev.detail.elt;
    if (t && t.id === "actions" && t.hasAttribute("data-deferred") && src !== t) t.setAttribute("data-superseded", "1");
  });
  document.addEventListener("htmx:beforeSwap", function (ev) {
    var src = ev.detail && ev.detail.requestConfig && ev.detail.requestConfig.elt;
    if (!src || src.id !== "actions" || !src.hasAttribute("data-deferred")) return;
    if (src.hasAttribute("data-superseded") || document.getElementById("actions") !== src) ev.detail.shouldSwap = false;
  });

  document.addEventListener("htmx:afterSwap", function (ev) {
    var t = ev.detail && ev.detail.target;
    if (!t) return;
    if (t.id === "actions" || t.id === "editor") selected = -1;
    var ed = editor();
    if (ed) {   // keep the page-level controls in step with the viewed step
      var step = ed.getAttribute("data-step");
      var fork = document.getElementById("fork-step");
      if (fork) fork.value = step;
      var cmp = document.getElementById("compare-link");
      if (cmp) cmp.setAttribute("href", cmp.getAttribute("href").replace(/b=\d+/, "b=" + step));
    }
  });
})();

/* ------------------------------------------------------------------------------------------
   Code views: folded unchanged runs open on click; the lines of the IR, the C (assembly tab
   and the C diff) and the assembly that belong together light up together on hover, and
   stay lit after a click (which also scrolls the other columns to them).
   ------------------------------------------------------------------------------------------ */
(function () {
  "use strict";

  document.addEventListener("click", function (ev) {
    var btn = ev.target.closest && ev.target.closest("button.unfold");
    if (!btn) return;
    var table = btn.closest("table");
    var id = btn.getAttribute("data-fold");
    if (table) {
      table.querySelectorAll('tr.folded[data-fold="' + id + '"]').forEach(function (tr) { tr.hidden = false; });
    }
    var row = btn.closest("tr");
    if (row) row.remove();
  });

  function all(sel) { return Array.prototype.slice.call(document.querySelectorAll(sel)); }

  // the elements linked to a key: "ir:N" (an IR line) or "c:N" (a line of the C)
  function linked(key) {
    if (!key) return [];
    var kind = key.split(":")[0], n = key.split(":")[1], out = [], cLines = [];
    if (kind === "ir") {
      out = all("#L" + n + ", [data-ir=\"" + n + "\"]");
      cLines = all("#c-lines .cl[data-ir=\"" + n + "\"]").map(function (el) { return el.getAttribute("data-c"); });
    } else {
      var c = document.querySelector("#c-lines .cl[data-c=\"" + n + "\"]");
      if (c) out.push(c);
      var ir = c && c.getAttribute("data-ir");
      if (ir) { var l = document.getElementById("L" + ir); if (l) out.push(l); }
      cLines = [n];
    }
    cLines.forEach(function (cn) { out = out.concat(all("#asm-lines .al[data-c=\"" + cn + "\"]")); });
    return out;
  }

  function keyOf(el) {
    if (!el || !el.closest) return null;
    var line = el.closest("#ir .line");
    if (line && line.id) return "ir:" + line.id.slice(1);
    var code = el.closest("#c-lines .cl[data-c], #asm-lines .al[data-c]");
    if (code) return "c:" + code.getAttribute("data-c");
    var cell = el.closest("#diff td[data-ir]");
    if (cell) return "ir:" + cell.getAttribute("data-ir");
    return null;
  }

  // an IR line that is pointed at (or clicked, then selected) has its own highlight
  function irLineOf(el) { return el && el.closest ? el.closest("#ir .line") : null; }

  var shown = null, shownFrom = null, pinned = null, pinnedFrom = null;
  function show(key, from) {
    if (key === shown && from === shownFrom) return;
    all(".linked").forEach(function (el) { el.classList.remove("linked"); });
    linked(key).forEach(function (el) { if (el !== from) el.classList.add("linked"); });
    shown = key;
    shownFrom = from;
  }

  // scroll a column (not the page) so that its first linked line is in view
  function reveal(key, except) {
    ["c-lines", "asm-lines"].forEach(function (id) {
      var box = document.getElementById(id);
      if (!box || box.contains(except)) return;
      var first = box.querySelector(".linked");
      if (!first) return;
      var top = first.offsetTop, bottom = top + first.offsetHeight;
      if (top < box.scrollTop || bottom > box.scrollTop + box.clientHeight) {
        box.scrollTop = Math.max(0, top - box.clientHeight / 3);
      }
    });
  }

  document.addEventListener("mouseover", function (ev) {
    var key = keyOf(ev.target);
    if (key) show(key, irLineOf(ev.target));
    else show(pinned, pinnedFrom);
  });
  document.addEventListener("click", function (ev) {
    var key = keyOf(ev.target);
    if (!key) return;
    pinned = key;
    pinnedFrom = irLineOf(ev.target);
    shown = null;
    show(key, pinnedFrom);
    reveal(key, ev.target);
  });
  document.addEventListener("htmx:afterSwap", function (ev) {
    var t = ev.detail && ev.detail.target;
    if (t && t.id === "editor") {          // another step: only its selected IR line stays pinned
      var sel = document.querySelector("#ir .line.selected");
      pinned = sel && sel.id ? "ir:" + sel.id.slice(1) : null;
      pinnedFrom = sel;
    } else if (pinnedFrom && !document.body.contains(pinnedFrom)) {
      pinnedFrom = pinned ? document.getElementById("L" + pinned.split(":")[1]) : null;
    }
    shown = null;
    show(pinned, pinnedFrom);
    reveal(pinned, null);
  });
})();

/* ===== History tree: viewed marks, run nodes, scroll to the viewed step, the plot of the
   viewed branch, run end, share link, .steps copy.  The server renders the tree the same
   for every viewer (pushes carry no viewed step); this section marks the viewed step and
   its path from the root on it. ===== */
(function () {
  "use strict";
  var userOpen = {};       // run-details id -> open state the player chose (summary clicks)
  var activeRuns = {};     // agent-run li id -> seen queued/running on this page

  function viewedStep() { var ed = document.getElementById("editor"); return ed ? ed.getAttribute("data-step") : null; }
  function sessionId() { var ed = document.getElementById("editor"); return ed ? ed.getAttribute("data-session") : null; }

  function pathTo(step) {      // step indices from the root to ``step`` (strings), from the tree
    var out = [], seen = {};
    var el = step == null ? null : document.getElementById("tree-" + step);
    while (el && !seen[el.id]) {
      seen[el.id] = 1;
      out.unshift(el.getAttribute("data-index"));
      var parent = el.getAttribute("data-parent");
      el = parent == null ? null : document.getElementById("tree-" + parent);
    }
    return out;
  }

  function markTree() {
    var tree = document.getElementById("tree");
    if (!tree) return;
    var step = viewedStep(), onPath = {};
    pathTo(step).forEach(function (i) { onPath[i] = 1; });
    tree.querySelectorAll("li.step").forEach(function (li) {
      var i = li.getAttribute("data-index");
      var cls = ["step"];
      if (li.classList.contains("current")) cls.push("current");
      if (i === step) cls.push("viewed");
      if (onPath[i]) cls.push("on-path");
      var want = cls.join(" ");
      if (li.className !== want) li.className = want;
      var a = li.querySelector(":scope > a");
      if (a) { if (i === step) a.setAttribute("aria-current", "step"); else a.removeAttribute("aria-current"); }
    });
    tree.querySelectorAll("details[id^=run-details-]").forEach(function (d) {
      if (Object.prototype.hasOwnProperty.call(userOpen, d.id)) d.open = userOpen[d.id];
    });
    var v = document.getElementById("tree-" + step);       // the run holding the viewed step stays open
    for (var p = v && v.parentElement; p && p !== tree; p = p.parentElement) {
      if (p.tagName === "DETAILS" && !p.open && userOpen[p.id] !== false) p.open = true;
    }
    var measured = document.getElementById("tree-measured-only");
    if (measured) measured.checked = sessionStorage.getItem("dojo-tree-measured") === "1";
  }

  function revealViewed() {     // scroll the tree's box to the viewed step
    var box = document.getElementById("tree-box"), v = document.getElementById("tree-" + viewedStep());
    if (!box || !v) return;
    var b = box.getBoundingClientRect(), r = v.getBoundingClientRect();
    if (r.top < b.top || r.bottom > b.bottom) box.scrollTop += r.top - b.top - box.clientHeight / 3;
  }

  function drawBranch() {       // each runner's line joins the measured steps of the viewed branch
    var svg = document.querySelector("svg.plot");
    if (!svg) return;
    var order = {};
    pathTo(viewedStep()).forEach(function (i, n) { order[i] = n; });
    svg.querySelectorAll("polyline.branch-line").forEach(function (line) {
      var runner = line.getAttribute("data-runner"), pts = [];
      svg.querySelectorAll("circle[data-step]").forEach(function (c) {
        if (c.getAttribute("data-runner") !== runner) return;
        var i = c.getAttribute("data-step"), on = Object.prototype.hasOwnProperty.call(order, i);
        c.classList.toggle("off-branch", !on);
        if (on) pts.push([order[i], c.getAttribute("cx") + "," + c.getAttribute("cy")]);
      });
      pts.sort(function (a, b) { return a[0] - b[0]; });
      line.setAttribute("points", pts.length > 1 ? pts.map(function (p) { return p[1]; }).join(" ") : "");
    });
  }

  function shareLink() {
    var share = document.getElementById("share-url"), sid = sessionId(), step = viewedStep();
    if (share && sid && step != null) share.value = location.origin + "/s/" + sid + "/?step=" + step;
  }

  function lastStepOf(runId) {
    var max = -1;
    document.querySelectorAll('#tree .run-node[data-run="' + runId + '"] li.step').forEach(function (s) {
      max = Math.max(max, +s.getAttribute("data-index"));
    });
    return max >= 0 ? String(max) : null;
  }

  function watchRuns() {        // a run that ends while its start step is viewed moves the view to
                                // its best step (its newest one when the start step stayed best)
    document.querySelectorAll("#agent-runs li[data-final]").forEach(function (li) {
      if (li.getAttribute("data-final") !== "1") { activeRuns[li.id] = true; return; }
      if (!activeRuns[li.id]) return;
      delete activeRuns[li.id];
      var start = li.getAttribute("data-start"), target = li.getAttribute("data-best");
      if (target == null || target === start) target = lastStepOf(li.id.split("-").pop());
      var sid = sessionId();
      if (target == null || !sid || viewedStep() !== start || target === start) return;
      var url = "/s/" + sid + "/?step=" + target;
      htmx.ajax("GET", url, { target: "#editor", swap: "outerHTML" }).then(function () {
        history.pushState({}, "", url);
      });
    });
  }

  function refresh(reveal) {
    markTree();
    if (reveal) revealViewed();
    drawBranch();
    shareLink();
    watchRuns();
  }

  document.addEventListener("click", function (ev) {
    var summary = ev.target.closest && ev.target.closest(".run-node > details > summary");
    if (summary && !(ev.target.closest("a"))) userOpen[summary.parentElement.id] = !summary.parentElement.open;
    var copy = ev.target.closest && ev.target.closest("#copy-steps");
    if (copy) copySteps();
  });

  document.addEventListener("change", function (ev) {
    if (ev.target && ev.target.id === "tree-measured-only") {
      sessionStorage.setItem("dojo-tree-measured", ev.target.checked ? "1" : "0");
    }
  });

  function copySteps() {
    var ta = document.getElementById("steps-text"), status = document.getElementById("copy-status");
    if (!ta) return;
    var lines = ta.value.split("\n").filter(function (l) { return l.trim() && l.trim()[0] !== "#"; }).length;
    var done = function () { if (status) status.textContent = "copied " + lines + " step" + (lines === 1 ? "" : "s"); };
    var fallback = function () { ta.focus(); ta.select(); try { document.execCommand("copy"); } catch (e) { /* selected */ } done(); };
    if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(ta.value).then(done, fallback);
    else fallback();
  }

  document.addEventListener("htmx:afterSettle", function (ev) {
    var t = ev.detail && ev.detail.target;
    refresh(!!(t && t.id === "editor"));
  });
  document.addEventListener("htmx:wsAfterMessage", function () { refresh(false); });
  document.addEventListener("DOMContentLoaded", function () { refresh(true); });
})();

/* ------------------------------------------------------------------------------------------
   Benchmark numbers: a pushed result card (#step-results) replaces the page's card only when
   it is the card of the step this page views; the push names the job's step. */
(function () {
  "use strict";
  document.addEventListener("htmx:oobBeforeSwap", function (ev) {
    var target = ev.detail && ev.detail.target, fragment = ev.detail && ev.detail.fragment;
    if (!target || target.id !== "step-results" || !fragment) return;
    var incoming = fragment.querySelector ? fragment.querySelector("#step-results") : null;
    incoming = incoming || fragment.firstElementChild;
    if (incoming && incoming.getAttribute("data-step") !== target.getAttribute("data-step")) {
      ev.detail.shouldSwap = false;
    }
  });
})();
