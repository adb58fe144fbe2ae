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
