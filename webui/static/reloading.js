// Refreshes the review page while an apply just written awaits the
// server's reload, as the body's data-refresh asks (seconds), but never
// while the operator is typing in the page: a refresh would drop what they
// typed (a deny reason) and the click that follows would send the empty
// form. Without JavaScript the page's "refresh now" link does the same.
(function () {
  "use strict";
  var every = Number(document.body.getAttribute("data-refresh"));
  if (!(every > 0)) {
    return;
  }
  function typing() {
    var a = document.activeElement;
    if (a && (a.tagName === "INPUT" || a.tagName === "TEXTAREA" || a.tagName === "SELECT")) {
      return true;
    }
    var fields = document.querySelectorAll("input[type=text], input:not([type]), textarea");
    for (var i = 0; i < fields.length; i++) {
      if (fields[i].value !== "") {
        return true;
      }
    }
    return false;
  }
  setInterval(function () {
    if (!typing()) {
      window.location.reload();
    }
  }, every * 1000);
})();
