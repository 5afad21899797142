// While a submission is being judged, poll its status and update the bar; reload the page when
// it leaves "judging" so the finished page (leaderboard link) shows.
(function () {
  const card = document.getElementById("submission-progress");
  if (!card || card.dataset.status !== "judging") return;
  async function poll() {
    try {
      const r = await fetch(card.dataset.statusUrl, {headers: {Accept: "application/json"}});
      if (r.ok) {
        const s = await r.json();
        document.getElementById("status-bar").max = s.units_total || 1;
        document.getElementById("status-bar").value = s.units_done;
        document.getElementById("status-count").textContent = `${s.units_done} of ${s.units_total}`;
        document.getElementById("status-cost").textContent = s.cost;
        document.getElementById("status-label").textContent = s.status_label;
        if (s.status !== "judging") { window.location.reload(); return; }
      }
    } catch (e) { /* network blip: try again */ }
    setTimeout(poll, 1500);
  }
  setTimeout(poll, 1000);
})();
