// The page's Content-Security-Policy allows no inline event handler (onclick=, onsubmit=…): what they did is here.
// A form with data-confirm asks first (before the guard below marks it as sent, so "Cancel" leaves it usable).
document.addEventListener("submit", (event) => {
  const question = event.target.dataset && event.target.dataset.confirm;
  if (question && !window.confirm(question)) event.preventDefault();
});
// A select with data-submit-on-change sends its form when a choice is made (the language switch).
document.addEventListener("change", (event) => {
  if (event.target.matches && event.target.matches("select[data-submit-on-change]")) event.target.form.submit();
});
// A field with data-select-on-focus selects its text when focused (a new key, to copy at once).
document.addEventListener("focusin", (event) => {
  if (event.target.matches && event.target.matches("input[data-select-on-focus]")) event.target.select();
});
// A button with data-print opens the print dialog.
document.addEventListener("click", (event) => {
  if (event.target.closest && event.target.closest("[data-print]")) window.print();
});

// One submission per POST form: a double click must not file a request twice.
// htmx forms are left to htmx (it prevents the browser's own submit, so defaultPrevented is set here).
document.addEventListener("submit", (event) => {
  const form = event.target;
  if (event.defaultPrevented || form.method !== "post") return;
  if (form.dataset.submitting) {
    event.preventDefault();
    return;
  }
  form.dataset.submitting = "1";
  form.setAttribute("aria-busy", "true");
  // If the server never answers (or the user pressed Stop), allow another try after a while.
  setTimeout(() => release(form), 15000);
});

// Back/forward cache: a page restored after a submission must accept a new one.
window.addEventListener("pageshow", (event) => {
  if (event.persisted) document.querySelectorAll("form[data-submitting]").forEach(release);
});

function release(form) {
  delete form.dataset.submitting;
  form.removeAttribute("aria-busy");
}

// The person's menu closes when a click lands elsewhere or Escape is pressed, as menus do.
document.addEventListener("click", (event) => {
  document.querySelectorAll("details.user-menu[open]").forEach((menu) => {
    if (!menu.contains(event.target)) menu.open = false;
  });
});
document.addEventListener("keydown", (event) => {
  if (event.key === "Escape") document.querySelectorAll("details.user-menu[open]").forEach((menu) => (menu.open = false));
});

// The usage period picker: typing a date picks the custom range (the dates are the range asked for), and picking
// a week, a month or the program clears the dates, so what the fields show is what the report covers. The form's
// htmx trigger waits until the typing stops (one request per change, not one per keystroke of a date).
document.addEventListener(
  "input",
  (event) => {
    const form = event.target.closest && event.target.closest("form.period-picker");
    if (!form) return;
    const select = form.querySelector("select[name=period]");
    if (event.target.type === "date" && select && event.target.value) select.value = "range";
  },
  true,
);
document.addEventListener(
  "change",
  (event) => {
    const form = event.target.closest && event.target.closest("form.period-picker");
    if (!form) return;
    const select = form.querySelector("select[name=period]");
    if (event.target.type === "date" && select && event.target.value) select.value = "range";
    if (event.target === select && select.value !== "range") {
      form.querySelectorAll("input[type=date]").forEach((input) => (input.value = ""));
    }
  },
  true,
);

// A table wider than its box scrolls sideways (.table-scroll): a keyboard reaches it only if it can take the focus,
// so a box that scrolls takes it (tabindex 0, named by its table's first header) and one that fits does not.
function focusableScrollers() {
  document.querySelectorAll(".table-scroll").forEach((box) => {
    if (box.scrollWidth > box.clientWidth + 1) {
      box.setAttribute("tabindex", "0");
      box.setAttribute("role", "region");
      if (!box.hasAttribute("aria-label")) {
        const heading = box.closest("section, .card")?.querySelector("h2, h3");
        box.setAttribute("aria-label", heading ? heading.textContent.trim() : document.title);
      }
    } else if (box.getAttribute("tabindex") === "0") {
      box.removeAttribute("tabindex");
      box.removeAttribute("role");
    }
  });
}
document.addEventListener("DOMContentLoaded", focusableScrollers);
document.addEventListener("htmx:afterSettle", focusableScrollers);
window.addEventListener("resize", focusableScrollers);

// A form with data-auto-submit sends itself once the page is read (SAML sign-in: the IdP's answer posted again from
// the portal's own page, so the session cookie goes with it); its button does the same without scripts.
document.querySelectorAll("form[data-auto-submit]").forEach((form) => form.submit());
