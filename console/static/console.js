// Live updates of the Gatehouse console: /events (server-sent events) says
// when the pending approvals or the unreviewed drift changed; the page then
// fetches itself again and swaps its <main> in place, without a reload.
(function () {
  "use strict";
  var body = document.body;
  if (!window.EventSource || !window.fetch || !body || !body.dataset.state) {
    return;
  }
  var last = body.dataset.state;
  var busy = false;
  var again = false;
  function refresh() {
    if (busy) {
      again = true;
      return;
    }
    busy = true;
    fetch(location.href, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (r) {
        if (r.redirected || !r.ok) {
          return null;
        }
        return r.text();
      })
      .then(function (html) {
        if (html === null) {
          return;
        }
        var doc = new DOMParser().parseFromString(html, "text/html");
        var next = doc.querySelector("main");
        var cur = document.querySelector("main");
        if (next && cur) {
          cur.replaceWith(document.adoptNode(next));
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
  var es = new EventSource("/events");
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
