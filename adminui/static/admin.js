// Progressive enhancement of the admin interface: every page works
// without this file. It adds the copy buttons of shown-once secrets and
// focuses the secret when a page shows one.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("button[data-copy]").forEach(function (b) {
    b.addEventListener("click", function () {
      var input = document.getElementById(b.getAttribute("data-copy"));
      if (!input) return;
      input.select();
      var done = function () { b.textContent = "Copied"; };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(input.value).then(done, function () { document.execCommand("copy"); done(); });
      } else {
        document.execCommand("copy");
        done();
      }
    });
  });
  var secret = document.getElementById("secret-value");
  if (secret) { secret.focus(); secret.select(); }
  var warnable = document.querySelectorAll("input[data-warn]");
  var update = function () {
    warnable.forEach(function (i) {
      var w = document.getElementById(i.getAttribute("data-warn"));
      if (w) w.hidden = !document.querySelector("input[data-warn='" + i.getAttribute("data-warn") + "']:checked");
    });
  };
  warnable.forEach(function (i) { i.addEventListener("change", update); });
  update();
});
