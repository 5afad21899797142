// Times in the reader's own time zone: every <time datetime="…" data-local> is rewritten in the
// browser's zone, and [data-local-zone] names that zone. Without JavaScript the server's times
// stay, labelled with the server's zone.
(() => {
  const times = document.querySelectorAll("time[data-local]");
  if (!times.length || typeof Intl === "undefined") return;
  const format = new Intl.DateTimeFormat(undefined, {
    year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit",
  });
  times.forEach((el) => {
    const when = new Date(el.getAttribute("datetime"));
    if (!Number.isNaN(when.getTime())) el.textContent = format.format(when);
  });
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  const short = new Intl.DateTimeFormat(undefined, { timeZoneName: "short" })
    .formatToParts(new Date()).find((part) => part.type === "timeZoneName");
  document.querySelectorAll("[data-local-zone]").forEach((el) => {
    el.textContent = short && short.value !== zone ? `${zone} (${short.value})` : zone;
  });
})();
