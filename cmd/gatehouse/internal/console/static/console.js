// Live updates of the Gatehouse console: /events (server-sent events) says
// when the pending approvals or the unreviewed drift changed; the page then
// fetches itself again and swaps its <main> in place, without a reload.
// The refresh says so (X-Gatehouse-Refresh): the server then leaves the
// session's messages for the next page shown, and the messages this page
// shows (p[data-said]) stay on it. A page that is leaving (a form posted,
// the page hidden for another) stops refreshing, so its refresh cannot
// race the page that follows it; one shown again from the back-forward
// cache loads itself afresh. What the operator typed in a field marked
// data-keep survives the swap.
(function () {
  "use strict";
  var body = document.body;
  if (!window.EventSource || !window.fetch || !body || !body.dataset.state) {
    return;
  }
  var last = body.dataset.state;
  var busy = false;
  var again = false;
  var leaving = false;
  function refresh() {
    if (leaving) {
      return;
    }
    if (busy) {
      again = true;
      return;
    }
    busy = true;
    fetch(location.href, { credentials: "same-origin", headers: { "Accept": "text/html", "X-Gatehouse-Refresh": "1" } })
      .then(function (r) {
        if (r.redirected || !r.ok) {
          return null;
        }
        return r.text();
      })
      .then(function (html) {
        if (html === null || leaving) {
          return;
        }
        var doc = new DOMParser().parseFromString(html, "text/html");
        var next = doc.querySelector("main");
        var cur = document.querySelector("main");
        if (next && cur) {
          var shown = cur.querySelectorAll(":scope > p[data-said]");
          var first = next.firstChild;
          for (var i = 0; i < shown.length; i++) {
            next.insertBefore(document.importNode(shown[i], true), first);
          }
          var refocus = keepTyped(cur, next);
          cur.replaceWith(document.adoptNode(next));
          if (refocus) {
            refocus.focus();
          }
        }
        if (doc.body && doc.body.dataset.state) {
          body.dataset.state = doc.body.dataset.state;
        }
      })
      .catch(function () {})
      .then(function () {
        busy = false;
        if (again) {
          again = false;
          refresh();
        }
      });
  }
  // keepTyped carries what the operator typed in the page's fields marked
  // data-keep (a flagged drift's confirmation) to the same field of the
  // page that replaces it, and returns that field when it had the focus.
  function keepTyped(cur, next) {
    var refocus = null;
    var typed = cur.querySelectorAll("input[data-keep]");
    for (var i = 0; i < typed.length; i++) {
      var key = typed[i].dataset.keep;
      var fresh = next.querySelectorAll("input[data-keep]");
      for (var j = 0; j < fresh.length; j++) {
        if (fresh[j].dataset.keep === key) {
          fresh[j].value = typed[i].value;
          if (document.activeElement === typed[i]) {
            refocus = fresh[j];
          }
        }
      }
    }
    return refocus;
  }
  var es = new EventSource("/events");
  function leave() {
    leaving = true;
    es.close();
  }
  document.addEventListener("submit", leave);
  window.addEventListener("pagehide", leave);
  window.addEventListener("pageshow", function (ev) {
    if (ev.persisted) {
      location.reload();
    }
  });
  es.addEventListener("state", function (ev) {
    var s;
    try {
      s = JSON.parse(ev.data);
    } catch (e) {
      return;
    }
    if (s.state !== last) {
      last = s.state;
      refresh();
    }
  });
})();
