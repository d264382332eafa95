// Instant filtering of the reference as one types in the search field; the
// form still submits ?q= for the server-side filter (and without script).
(function () {
  "use strict";
  document.addEventListener("DOMContentLoaded", function () {
    var input = document.getElementById("q");
    var matches = document.getElementById("matches");
    if (!input) { return; }
    var ops = Array.prototype.slice.call(document.querySelectorAll("article.op"));
    var sections = Array.prototype.slice.call(document.querySelectorAll("section.tag"));
    function filter() {
      var words = input.value.toLowerCase().split(/\s+/).filter(Boolean);
      var shown = 0;
      ops.forEach(function (op) {
        var text = op.getAttribute("data-search") || "";
        var ok = words.every(function (w) { return text.indexOf(w) >= 0; });
        op.hidden = !ok;
        var entry = document.querySelector('.toc-op[data-op="' + op.id + '"]');
        if (entry) { entry.hidden = !ok; }
        if (ok) { shown++; }
      });
      sections.forEach(function (s) {
        var any = s.querySelector("article.op:not([hidden])") !== null;
        s.hidden = !any;
        var entry = document.querySelector('.toc-tag[data-tag="' + s.id + '"]');
        if (entry) { entry.hidden = !any; }
      });
      if (matches) {
        matches.hidden = words.length === 0;
        matches.textContent = shown + " of " + ops.length + " operations shown.";
      }
    }
    input.addEventListener("input", filter);
  });
})();
