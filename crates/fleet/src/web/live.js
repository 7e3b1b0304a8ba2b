// Live updates without polling: the server pushes the rendered fleet over Server-Sent Events
// and the page swaps it in. Without JavaScript the page is the same table, current when loaded.
(function () {
  var q = new URLSearchParams(location.search);
  var url = "events" + (q.get("token") ? "?token=" + encodeURIComponent(q.get("token")) : "");
  var es = new EventSource(url);
  es.addEventListener("fleet", function (e) {
    var el = document.getElementById("fleet");
    if (el) { el.innerHTML = e.data; }
    document.body.setAttribute("data-updates", String(1 + Number(document.body.getAttribute("data-updates") || 0)));
  });
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
