// Keeps the header's count of pending requests current, and says when it
// changed. The page works without it: every decision is a plain form.
(function () {
  "use strict";
  var count = document.getElementById("pending-count");
  var note = document.getElementById("pending-note");
  if (!count || !window.fetch) {
    return;
  }
  var shown = count.textContent;
  function poll() {
    fetch("/api/requests?status=pending", { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (list) {
        if (!Array.isArray(list)) {
          return;
        }
        var n = String(list.length);
        count.textContent = n;
        if (note) {
          note.hidden = n === shown;
        }
      })
      .catch(function () {});
  }
  setInterval(poll, 10000);
})();
