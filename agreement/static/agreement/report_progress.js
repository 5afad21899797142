// Report page while the report builds: poll its status endpoint, move the progress bar, and
// reload into the finished (or failed) report. Without JavaScript, a <noscript> meta refresh
// reloads the page instead.
(function () {
  "use strict";
  var box = document.getElementById("progress");
  if (!box) return;
  var url = box.getAttribute("data-status-url");
  var bar = document.getElementById("progress-bar");
  var stage = document.getElementById("progress-stage");
  var percent = document.getElementById("progress-percent");
  var delay = 1000;

  function show(s) {
    bar.value = s.progress;
    percent.textContent = s.progress + "%";
    stage.textContent = s.status === "pending" ? "waiting to start" : (s.stage || "starting");
  }

  function poll() {
    fetch(url, {headers: {"Accept": "application/json"}, credentials: "same-origin"})
      .then(function (r) {
        if (!r.ok) throw new Error("HTTP " + r.status);
        return r.json();
      })
      .then(function (s) {
        show(s);
        if (s.finished) {
          window.location.reload();
          return;
        }
        delay = 1000;
        window.setTimeout(poll, delay);
      })
      .catch(function () {
        stage.textContent = "(status unavailable, retrying…)";
        delay = Math.min(delay * 2, 15000);
        window.setTimeout(poll, delay);
      });
  }

  window.setTimeout(poll, delay);
})();
