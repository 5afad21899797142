// Task pages: keyboard shortcuts, character counters, the minimum-time guard, lease countdown,
// telemetry sent with the answer, and no double submits. Plain JS, no build step.
(() => {
  const form = document.getElementById("hit-form");
  if (!form) return;
  const submit = document.getElementById("submit-btn");
  const guard = document.getElementById("time-guard");
  // A submit answers with the next task's page itself; show that task's own address, so a
  // reload or a bookmark asks for this task (a GET) instead of re-posting the last answer.
  const own = form.getAttribute("action");
  if (own && own.startsWith("/") && own !== location.pathname) {
    history.replaceState(null, "", own);
  }
  const typing = (el) => el && (el.tagName === "TEXTAREA" || (el.tagName === "INPUT" && !["radio", "checkbox"].includes(el.type)));

  // Keyboard: elements carry data-key="1 a"; Enter submits when not typing.
  const keyed = new Map();
  document.querySelectorAll("[data-key]").forEach((el) => {
    el.dataset.key.split(/\s+/).forEach((k) => keyed.set(k.toLowerCase(), el));
  });
  document.addEventListener("keydown", (ev) => {
    if (ev.ctrlKey || ev.metaKey || ev.altKey || typing(document.activeElement)) return;
    // The image viewer has its own keys (arrows, Esc); a focused plain button (zoom, side by
    // side) takes Enter itself rather than submitting the answer.
    if (document.body.classList.contains("viewer-open")) return;
    const active = document.activeElement;
    if (ev.key === "Enter" && active && active.tagName === "BUTTON" && active.type === "button") return;
    const target = keyed.get(ev.key.toLowerCase());
    if (target) {
      const input = target.querySelector("input") || target;
      input.click();
      input.focus();
      ev.preventDefault();
    } else if (ev.key === "Enter" && !submit.disabled) {
      ev.preventDefault();
      form.requestSubmit(submit);
    }
  });

  // Character counters for every field with a maxlength.
  form.querySelectorAll("textarea[maxlength], input[maxlength]").forEach((field) => {
    const counter = document.createElement("span");
    counter.className = "counter small";
    counter.setAttribute("aria-live", "polite");
    const update = () => {
      counter.textContent = `${field.value.length} / ${field.maxLength}`;
      counter.classList.toggle("near", field.value.length > 0.9 * field.maxLength);
    };
    field.insertAdjacentElement("afterend", counter);
    field.addEventListener("input", update);
    update();
  });

  // Minimum-time guard: the server refuses early submits too; this explains it up front.
  const minSeconds = parseInt(form.dataset.minSeconds || "0", 10);
  const started = Date.now();
  if (minSeconds > 0) {
    submit.disabled = true;
    const tick = () => {
      const left = Math.ceil(minSeconds - (Date.now() - started) / 1000);
      if (left <= 0) {
        submit.disabled = false;
        guard.textContent = "";
        return;
      }
      guard.textContent = `Please read carefully — submit unlocks in ${left} s`;
      setTimeout(tick, 250);
    };
    tick();
  }

  // Lease countdown.
  const countdown = document.querySelector("[data-countdown]");
  if (countdown) {
    const end = Date.now() + parseInt(countdown.dataset.countdown, 10) * 1000;
    const show = () => {
      const s = Math.max(0, Math.round((end - Date.now()) / 1000));
      countdown.textContent = `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`;
      if (s > 0) setTimeout(show, 1000);
    };
    show();
  }

  // Telemetry, sent with the answer as one hidden field (the server checks every value):
  // time the page was visible and focused, window blurs, and pastes / keystrokes in the
  // free-text fields (textareas and text inputs; not URLs, choices or hidden fields).
  const measured = { active_ms: 0, blurs: 0, pastes: 0, pasted_chars: 0, keystrokes: 0 };
  const freeText = (el) => el && form.contains(el) && (el.tagName === "TEXTAREA"
    || (el.tagName === "INPUT" && ["text", "search", ""].includes(el.getAttribute("type") || "")));
  let activeSince = null;
  const account = () => {
    const active = document.visibilityState === "visible" && document.hasFocus();
    if (activeSince !== null) measured.active_ms += Date.now() - activeSince;
    activeSince = active ? Date.now() : null;
  };
  account();
  document.addEventListener("visibilitychange", account);
  window.addEventListener("focus", account);
  window.addEventListener("blur", () => { measured.blurs += 1; account(); });
  form.addEventListener("keydown", (ev) => {
    if (freeText(ev.target) && !ev.ctrlKey && !ev.metaKey) measured.keystrokes += 1;
  });
  form.addEventListener("paste", (ev) => {
    if (!freeText(ev.target)) return;
    measured.pastes += 1;
    measured.pasted_chars += ((ev.clipboardData && ev.clipboardData.getData("text")) || "").length;
  });
  form.addEventListener("submit", () => {
    account();
    let field = form.querySelector("input[name=_telemetry]");
    if (!field) {
      field = document.createElement("input");
      field.type = "hidden";
      field.name = "_telemetry";
      form.appendChild(field);
    }
    field.value = JSON.stringify(measured);
  });

  form.addEventListener("submit", () => {
    setTimeout(() => { submit.disabled = true; submit.textContent = "Submitting…"; }, 0);
  });
})();

// Skip with undo: the skip is sent after a few seconds, and "Undo" within them keeps the task
// (nothing reaches the server until then; without JavaScript the button skips at once).
(() => {
  const skip = document.querySelector(".skip-form");
  if (!skip) return;
  const button = skip.querySelector("button[type=submit]");
  const seconds = parseInt(skip.dataset.undoSeconds || "5", 10);
  const status = document.createElement("span");
  status.className = "small skip-pending";
  status.setAttribute("role", "status");
  status.hidden = true;
  const text = document.createElement("span");
  const undo = document.createElement("button");
  undo.type = "button";
  undo.className = "link";
  undo.id = "skip-undo";
  undo.textContent = skip.dataset.undoLabel || "Undo";
  status.append(text, " ", undo);
  skip.append(status);
  let timer = null;
  const cancel = () => {
    clearTimeout(timer);
    timer = null;
    status.hidden = true;
    button.hidden = false;
    button.focus();
  };
  undo.addEventListener("click", cancel);
  skip.addEventListener("submit", (ev) => {
    ev.preventDefault();
    if (timer !== null) return;
    let left = seconds;
    button.hidden = true;
    status.hidden = false;
    const tick = () => {
      if (left <= 0) { skip.submit(); return; }
      text.textContent = (skip.dataset.pendingLabel || "Skipping this task in {s} s.").replace("{s}", left);
      left -= 1;
      timer = setTimeout(tick, 1000);
    };
    tick();
    undo.focus();
  });
})();
