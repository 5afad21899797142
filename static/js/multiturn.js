// Multi-turn A/B page: one question group is highlighted at a time; 1/A or 2/B (3/T tie, 4 both
// bad, where the batch offers them) answers it and
// moves on to the next unanswered group. Clicking or focusing a group makes it the active one.
// hit.js still handles Enter (submit), the time guard and the countdown.
(() => {
  const groups = Array.from(document.querySelectorAll("[data-group]"));
  if (!groups.length) return;
  const answered = (g) => !!g.querySelector("input:checked");
  // A page sent back after a refused submit keeps its choices: start at the first open group.
  let active = Math.max(0, groups.findIndex((g) => !answered(g)));
  const show = () => groups.forEach((g, i) => g.classList.toggle("active", i === active));
  groups.forEach((g, i) => {
    g.addEventListener("focusin", () => { active = i; show(); });
    g.addEventListener("click", () => { active = i; show(); });
  });
  document.addEventListener("keydown", (ev) => {
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    const el = document.activeElement;
    if (el && (el.tagName === "TEXTAREA" || (el.tagName === "INPUT" && el.type === "text"))) return;
    const key = ev.key.toLowerCase();
    const side = key === "1" || key === "a" ? "A" : key === "2" || key === "b" ? "B"
      : key === "3" || key === "t" ? "tie" : key === "4" ? "bad" : null;
    if (!side) return;
    ev.preventDefault();
    const input = groups[active].querySelector(`input[value="${side}"]`);
    if (!input || input.disabled) return;
    input.checked = true;
    input.dispatchEvent(new Event("change", { bubbles: true }));
    const next = groups.findIndex((g, i) => i > active && !answered(g));
    const anyOpen = groups.findIndex((g) => !answered(g));
    active = next >= 0 ? next : anyOpen >= 0 ? anyOpen : active;
    show();
    groups[active].scrollIntoView({ block: "nearest" });
  });
  show();
})();
