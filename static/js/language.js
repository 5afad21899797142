// The annotator's language switch: the choice goes into Django's language cookie (which
// LocaleMiddleware reads before the browser's languages) and the page reloads in it.
(() => {
  const form = document.getElementById("language-switch");
  if (!form) return;
  const select = form.querySelector("select");
  select.addEventListener("change", () => {
    const name = form.dataset.cookie || "django_language";
    document.cookie = `${name}=${encodeURIComponent(select.value)}; path=/; max-age=31536000; SameSite=Lax`;
    location.reload();
  });
})();
