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
})();
