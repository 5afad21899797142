// Batch upload page: show only the chosen HIT type's column table. Without JS every table
// stays visible (each names its type), so nothing is lost.
document.addEventListener("DOMContentLoaded", () => {
  const select = document.getElementById("id_hit_type");
  const sections = document.querySelectorAll("[data-hit-type]");
  if (!select || !sections.length) return;
  const show = () => {
    sections.forEach((section) => {
      section.hidden = section.dataset.hitType !== select.value;
    });
  };
  select.addEventListener("change", show);
  show();
});
