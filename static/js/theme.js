/* PerfDojo: the colour theme and the narrow-screen defaults.  Loaded in <head> without
   defer, so the stored theme is applied before the first paint (no flash of light).
   The theme follows the browser (prefers-color-scheme) until the toggle in the header
   stores a choice in localStorage ("dojo-theme": "dark" or "light").  At widths of
   700 px and less an editor page that was not asked for a diff mode shows the unified diff. */
(function () {
  "use strict";
  var KEY = "dojo-theme";
  var root = document.documentElement;
  var media = window.matchMedia ? window.matchMedia("(prefers-color-scheme: dark)") : null;

  function stored() {
    try { var t = window.localStorage.getItem(KEY); return t === "dark" || t === "light" ? t : null; }
    catch (e) { return null; }
  }
  function effective() { return stored() || (media && media.matches ? "dark" : "light"); }
  function apply() {
    var t = stored();
    if (t) root.setAttribute("data-theme", t); else root.removeAttribute("data-theme");
    var button = document.getElementById("theme-toggle");
    if (!button) return;
    var dark = effective() === "dark";
    button.setAttribute("aria-pressed", dark ? "true" : "false");
    button.title = dark ? "switch to the light theme" : "switch to the dark theme";
    var label = button.querySelector(".label");
    if (label) label.textContent = dark ? "Light" : "Dark";
  }
  apply();
  if (media && media.addEventListener) media.addEventListener("change", apply);

  function narrow() { return !!window.matchMedia && window.matchMedia("(max-width: 700px)").matches; }
  var modeChosen = /[?&]diff=/.test(window.location.search);   // the player's choice wins

  function narrowDiff() {
    if (!narrow()) return;
    if (modeChosen) return;
    var diff = document.getElementById("diff");
    var unified = document.getElementById("mode-unified");
    if (!diff || !unified || diff.getAttribute("data-mode") !== "split" || !window.htmx) return;
    window.htmx.ajax("GET", unified.getAttribute("hx-get"), { target: "#diff", swap: "outerHTML" });
  }

  document.addEventListener("DOMContentLoaded", function () {
    apply();
    var button = document.getElementById("theme-toggle");
    if (button) button.addEventListener("click", function () {
      var next = effective() === "dark" ? "light" : "dark";
      try { window.localStorage.setItem(KEY, next); } catch (e) { root.setAttribute("data-theme", next); }
      apply();
      if (!stored()) root.setAttribute("data-theme", next);    // storage refused: this page only
    });
    window.setTimeout(narrowDiff, 0);                          // after htmx has started
    // registered after dojo.js's handler, which asks for the diff mode shown: until the
    // player picks one, a narrow screen asks for the unified diff
    document.addEventListener("htmx:configRequest", function (ev) {
      var p = ev.detail && ev.detail.parameters;
      if (modeChosen || !narrow() || !p) return;
      if (p["diff"] === "split") p["diff"] = "unified";
    });
  });
  document.addEventListener("click", function (ev) {
    if (ev.target.closest && ev.target.closest("#mode-split, #mode-unified")) modeChosen = true;
  }, true);
})();
