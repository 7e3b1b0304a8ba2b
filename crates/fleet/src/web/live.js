// Live updates without polling: the server pushes what changed over Server-Sent Events and the
// page swaps it in — `parts` (a list of [element id, HTML]) or the whole `fleet`. Without
// JavaScript the page is the same table, current when loaded. A page holding part of the
// fleet (`data-partial`: its first clusters) asks for the whole fleet, once it is painted.
(function () {
  var q = new URLSearchParams(location.search);
  var fleet = document.getElementById("fleet");
  function url(since) {
    var u = "events?since=" + encodeURIComponent(since);
    return q.get("token") ? u + "&token=" + encodeURIComponent(q.get("token")) : u;
  }
  function updated() {
    document.body.setAttribute("data-updates", String(1 + Number(document.body.getAttribute("data-updates") || 0)));
  }
  var es;
  // `since`: the version this page shows; the server sends what changed after it (the browser
  // sends Last-Event-ID itself when it reconnects).
  function connect(since) {
    es = new EventSource(url(since));
    es.addEventListener("fleet", function (e) {
      if (fleet) { fleet.innerHTML = e.data; fleet.removeAttribute("data-partial"); }
      updated();
    });
    es.addEventListener("parts", function (e) {
      var lost = false;
      JSON.parse(e.data).forEach(function (p) {
        var el = document.getElementById(p[0]);
        if (el) { el.outerHTML = p[1]; } else { lost = true; }
      });
      updated();
      // A part the page does not have: start over from the whole fleet.
      if (lost) { es.close(); connect("none"); }
    });
  }
  function start() {
    var since = fleet && !fleet.hasAttribute("data-partial") ? fleet.getAttribute("data-version") : null;
    connect(since || "none");
  }
  // After the first paint (the frame's callback, then a task after it), so that the page shows
  // first what it holds and the rest of a partial page comes after. A hidden page paints no
  // frame: it connects at once.
  if (document.visibilityState === "hidden") {
    start();
  } else {
    requestAnimationFrame(function () { setTimeout(start, 0); });
  }
  // The events' ages, as the server writes them ("40 s", "3 min"), kept current from each
  // <time datetime> by the page's own clock: nothing is asked of the server.
  function age(s) {
    s = Math.max(0, Math.floor(s));
    if (s < 60) { return s + " s"; }
    if (s < 3600) { return Math.floor(s / 60) + " min"; }
    if (s < 86400) { return Math.floor(s / 3600) + " h"; }
    return Math.floor(s / 86400) + " d";
  }
  setInterval(function () {
    var now = Date.now();
    document.querySelectorAll("#fleet time[datetime]").forEach(function (t) {
      var at = Date.parse(t.getAttribute("datetime"));
      if (!isNaN(at)) { t.textContent = age((now - at) / 1000); }
    });
  }, 10000);
})();
