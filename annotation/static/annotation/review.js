// The review page's keyboard: j / k move between answers, x ticks the current one, a approves
// it, r rejects it (the reason box takes the focus; Enter sends). "Tick every answer on this
// page" ticks the page; "All … matching the filter" decides every page at once (the server
// re-applies the filter, so nothing unseen outside it is decided).
(function () {
  "use strict";
  var form = document.getElementById("review-form");
  if (!form) { return; }
  var rows = Array.prototype.slice.call(document.querySelectorAll(".review-row"));
  var current = -1;
  var reason = document.getElementById("id_reason");

  function focusRow(index) {
    if (!rows.length) { return; }
    index = Math.max(0, Math.min(rows.length - 1, index));
    if (current >= 0) { rows[current].classList.remove("current"); }
    current = index;
    rows[current].classList.add("current");
    rows[current].focus({preventScroll: true});
    rows[current].scrollIntoView({block: "nearest"});
  }

  function box(row) { return row.querySelector('input[name="assignment"]'); }

  function onlyCurrent() {
    rows.forEach(function (row) { var b = box(row); if (b) { b.checked = false; } });
    var matching = document.getElementById("id_matching");
    if (matching) { matching.checked = false; }
    var b = box(rows[current]);
    if (b) { b.checked = true; }
    return Boolean(b);
  }

  function decide(value) {
    var radio = document.getElementById("decision-" + value);
    if (radio) { radio.checked = true; }
  }

  var pageBox = document.getElementById("select-page");
  if (pageBox) {
    pageBox.addEventListener("change", function () {
      rows.forEach(function (row) { var b = box(row); if (b) { b.checked = pageBox.checked; } });
    });
  }

  document.addEventListener("keydown", function (event) {
    var tag = (event.target.tagName || "").toLowerCase();
    if (event.altKey || event.ctrlKey || event.metaKey) { return; }
    if (tag === "textarea" && event.key === "Enter" && !event.shiftKey && event.target === reason) {
      event.preventDefault();
      form.requestSubmit ? form.requestSubmit(document.getElementById("decide")) : form.submit();
      return;
    }
    if (tag === "input" || tag === "textarea" || tag === "select") { return; }
    if (event.key === "j") { focusRow(current + 1); }
    else if (event.key === "k") { focusRow(current - 1); }
    else if (event.key === "x" && current >= 0) {
      var b = box(rows[current]); if (b) { b.checked = !b.checked; }
    } else if (event.key === "a" && current >= 0) {
      if (onlyCurrent()) { decide("approve"); form.requestSubmit(document.getElementById("decide")); }
    } else if (event.key === "r" && current >= 0) {
      if (onlyCurrent()) { decide("reject"); event.preventDefault(); reason.focus(); }
    } else { return; }
    event.preventDefault();
  });
  rows.forEach(function (row, index) {
    row.addEventListener("click", function () { if (current !== index) { focusRow(index); } });
  });
}());
