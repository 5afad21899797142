// Reference verification: the reason is asked (and required) only when the answer is No.
(() => {
  const block = document.getElementById("reason-block");
  if (!block) return;
  const reasons = block.querySelectorAll("input[name=reason]");
  const sync = () => {
    const no = document.getElementById("correct-no").checked;
    block.hidden = !no;
    reasons.forEach((r) => { r.required = no; if (!no) r.checked = false; });
  };
  document.querySelectorAll("input[name=correct]").forEach((r) => r.addEventListener("change", sync));
  sync();
})();
