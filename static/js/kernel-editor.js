/* PerfDojo: the kernel editor of the "new kernel" page.  A textarea over a highlighted
   copy of its text (the same token classes as the Pygments lexer of dojo_core/highlight.py),
   with line numbers; Tab indents by two spaces, Enter keeps the indentation (and indents
   after a line ending in ":").  The checker's messages, rendered by the server at their
   lines, stay until the text changes; a message in the list moves the caret to its place.
   Without JavaScript the textarea is an ordinary one and the messages are listed below it. */
(function () {
  "use strict";

  var NAME = "[A-Za-z_][A-Za-z0-9_]*";
  function re(src) { return new RegExp("^(?:" + src + ")"); }
  var EXPR = [
    [re("[ \\t]+"), "w"], [re("#.*"), "c1"],
    [re("\\d+\\.\\d+(?:[eE][+-]?\\d+)?|\\d+[eE][+-]?\\d+"), "mf"], [re("\\d+"), "mi"], [re("inf\\b"), "mf"],
    [re("(?:exp|log|sqrt|rsqrt|tanh|erf|abs|max|min|pow|select)(?=[ \\t]*\\()"), "nb"],
    [re("max=|min="), "o"], [re(NAME), "n"],
    [re("\\.\\.|\\+=|\\*=|//|<=|>=|==|!=|[-+*/%<>=]"), "o"], [re("[()\\[\\],:.]"), "p"], [re("\\S"), "err"]
  ];
  // [pattern with groups, classes of the groups, next state]
  var HEADS = [
    [new RegExp("^(kernel)(\\s+)(" + NAME + ")"), ["k", "w", "nf"], "sizes"],
    [new RegExp("^(in|out|inout|temp)([ \\t]+)(" + NAME + ")([ \\t]*)(:)"), ["kd", "w", "nv", "w", "p"], "type"],
    [new RegExp("^(local)([ \\t]+)(" + NAME + ")([ \\t]*)(:)"), ["k", "w", "nv", "w", "p"], "type"],
    [new RegExp("^(for)([ \\t]+)(" + NAME + ")([ \\t]+)(in)\\b"), ["k", "w", "nv", "w", "k"], "loop"]
  ];
  var STATES = {
    sizes: [[new RegExp("^(" + NAME + ")([ \\t]*)(=)"), ["no", "w", "o"]], [re("[ \\t]+"), "w"], [re("\\d+"), "mi"],
            [re("[(),]"), "p"], [re("#.*"), "c1"], [re("\\S"), "err"]],
    type: [[re("(?:f32|f64|f16|bf16|i32|i64|i8)\\b"), "kt"], [re("\\["), "p", "dims"],
           [/^(in)([ \t]+)(register|stack|shared)\b/, ["k", "w", "kp"]]].concat(EXPR),
    dims: [[re("\\]"), "p", "type"]].concat(EXPR),
    loop: [[re("(?:parallel|vector|unroll|gpu\\.(?:block|thread)\\.[xyz])\\b"), "nd"]].concat(EXPR)
  };

  function esc(s) { return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;"); }
  function span(cls, text) { return text ? '<span class="' + cls + '">' + esc(text) + "</span>" : ""; }

  /* The highlighted HTML of one line (the lexer's states end with the line). */
  function highlightLine(line) {
    var out = "", rest = line, state = null, m;
    var lead = /^[ \t]*/.exec(rest)[0];
    out += span("w", lead); rest = rest.slice(lead.length);
    for (var h = 0; h < HEADS.length; h++) {
      if ((m = HEADS[h][0].exec(rest))) {
        for (var g = 1; g < m.length; g++) out += span(HEADS[h][1][g - 1], m[g]);
        rest = rest.slice(m[0].length); state = HEADS[h][2]; break;
      }
    }
    while (rest.length) {
      var rules = state ? STATES[state] : EXPR, hit = false;
      for (var r = 0; r < rules.length; r++) {
        if ((m = rules[r][0].exec(rest)) && m[0].length) {
          if (Array.isArray(rules[r][1])) { for (var k = 1; k < m.length; k++) out += span(rules[r][1][k - 1], m[k]); }
          else out += span(rules[r][1], m[0]);
          if (rules[r][2]) state = rules[r][2];
          rest = rest.slice(m[0].length); hit = true; break;
        }
      }
      if (!hit) { out += esc(rest[0]); rest = rest.slice(1); }
    }
    return out;
  }

  function setup(form) {
    if (!form || form.dataset.ready) return;
    form.dataset.ready = "1";
    var box = form.querySelector(".code-editor");
    var ta = form.querySelector("textarea");
    var overlay = form.querySelector(".overlay");
    var gutter = form.querySelector(".gutter");
    if (!box || !ta || !overlay || !gutter) return;
    box.classList.add("live");

    function render() {
      var lines = ta.value.replace(/\r\n?/g, "\n").split("\n");
      var html = [], nos = [];
      for (var i = 0; i < lines.length; i++) {
        html.push('<div class="ol" data-line="' + (i + 1) + '">' + highlightLine(lines[i]) + "</div>");
        nos.push('<div class="gl" data-line="' + (i + 1) + '">' + (i + 1) + "</div>");
      }
      overlay.innerHTML = html.join("");
      gutter.innerHTML = nos.join("");
      box.classList.remove("has-errors");
      var verdict = form.querySelector("#paste-verdict");
      if (verdict && verdict.firstElementChild) verdict.classList.add("stale");
      sync();
    }
    function sync() {
      overlay.scrollTop = ta.scrollTop; overlay.scrollLeft = ta.scrollLeft; gutter.scrollTop = ta.scrollTop;
    }
    function insert(text) {
      ta.focus();
      if (!document.execCommand || !document.execCommand("insertText", false, text)) {   // keeps undo where it can
        ta.setRangeText(text, ta.selectionStart, ta.selectionEnd, "end");
        render();
      }
    }
    function caretTo(line, col) {
      var lines = ta.value.split("\n"), pos = 0;
      for (var i = 0; i < Math.min(line - 1, lines.length); i++) pos += lines[i].length + 1;
      pos += Math.max(0, Math.min(col - 1, (lines[line - 1] || "").length));
      ta.focus(); ta.setSelectionRange(pos, pos);
      var lh = parseFloat(window.getComputedStyle(ta).lineHeight) || 20;
      ta.scrollTop = Math.max(0, (line - 3) * lh); sync();
    }

    var pending = false;          // one render per frame: a paste can fire an input event per line
    ta.addEventListener("input", function () {
      if (pending) return;
      pending = true;
      window.requestAnimationFrame(function () { pending = false; render(); });
    });
    ta.addEventListener("scroll", sync);
    ta.addEventListener("keydown", function (ev) {
      if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
      if (ev.key === "Tab" && !ev.shiftKey) { ev.preventDefault(); insert("  "); }
      else if (ev.key === "Enter") {
        var before = ta.value.slice(0, ta.selectionStart);
        var line = before.slice(before.lastIndexOf("\n") + 1);
        var indent = /^[ \t]*/.exec(line)[0] + (/:\s*$/.test(line) ? "  " : "");
        ev.preventDefault(); insert("\n" + indent);
      }
    });
    form.addEventListener("click", function (ev) {
      var a = ev.target.closest && ev.target.closest(".goto-error");
      if (!a) return;
      ev.preventDefault();
      caretTo(parseInt(a.getAttribute("data-line"), 10) || 1, parseInt(a.getAttribute("data-col"), 10) || 1);
    });
    var first = form.querySelector(".goto-error");       // after a refusal: the caret at the first problem
    if (first && form.hasAttribute("data-swapped")) caretTo(parseInt(first.getAttribute("data-line"), 10) || 1,
                                                            parseInt(first.getAttribute("data-col"), 10) || 1);
    sync();
  }

  function init() { document.querySelectorAll("form[data-kernel-editor]").forEach(setup); }
  document.addEventListener("DOMContentLoaded", init);
  document.addEventListener("htmx:load", function (ev) {        // new content, e.g. the checked form
    var el = ev.detail && ev.detail.elt;
    if (el && el.matches && el.matches("form[data-kernel-editor]")) {
      el.setAttribute("data-swapped", "1");
      setup(el);
    }
  });
  window.dojoHighlightLine = highlightLine;
})();
