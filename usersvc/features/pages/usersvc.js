// usersvc's pages: what HTML forms cannot do by themselves.
//
// Every page reads without this script. It adds the writes (create, edit
// with the ETag the page was shown at as If-Match, delete), each sent as
// JSON, and shows what the service answered in the form's role="alert"
// elements, each field's error beside it. With tokens on, the token a
// person enters is kept for this tab (sessionStorage) and sent as
// "Authorization: Bearer"; pages are then fetched with it, never with the
// token in a cookie or a URL.
"use strict";

(function () {
  const TOKEN = "usersvc-token";
  const FLASH = "usersvc-flash";
  let retried = false;

  const token = () => sessionStorage.getItem(TOKEN);

  function headers(more) {
    const all = Object.assign({ Accept: "application/json" }, more);
    const t = token();
    if (t) all.Authorization = "Bearer " + t;
    return all;
  }

  // Open a page: a plain navigation; with a token, a fetch that sends it,
  // whose page then takes the place of this one.
  async function go(url) {
    const same = new URL(url, location.href).href === location.href;
    if (!token()) {
      if (same) location.reload(); else location.assign(url);
      return;
    }
    const response = await fetch(url, { headers: headers({ Accept: "text/html" }) });
    const page = new DOMParser().parseFromString(await response.text(), "text/html");
    document.title = page.title;
    document.body.replaceWith(document.adoptNode(page.body));
    if (!same) history.pushState(null, "", url);
    start();
  }

  function say(form, field, text) {
    const place = form.querySelector(`[data-error-for="${field}"]`)
      || form.querySelector('[data-error-for=""]');
    place.textContent = place.textContent ? place.textContent + " " + text : text;
  }

  function clear(form) {
    for (const place of form.querySelectorAll("[data-error-for]")) place.textContent = "";
  }

  // A problem document in the form: the sentence at the form, each field
  // error beside its field.
  async function show(form, response) {
    let problem = {};
    try { problem = await response.json(); } catch (e) { /* not a problem document */ }
    if (response.status === 412) {
      say(form, "", "Not saved: this " + (form.dataset.kind || "record") +
        " was changed after this page was loaded (412 Precondition Failed). " +
        "Reload the page to see it as it is now.");
      return;
    }
    say(form, "", `${response.status} ${problem.title || response.statusText}: ` +
      (problem.detail || "the service refused the request."));
    for (const error of problem.errors || []) {
      say(form, error.pointer.replace(/^\//, ""), error.detail);
    }
  }

  async function send(form, method, body) {
    clear(form);
    const more = {};
    if (body !== undefined) more["Content-Type"] = "application/json";
    if (form.dataset.etag) more["If-Match"] = form.dataset.etag;
    let response;
    try {
      response = await fetch(form.dataset.url, { method, headers: headers(more), body });
    } catch (e) {
      say(form, "", "The service did not answer: " + e.message);
      return;
    }
    if (!response.ok) {
      await show(form, response);
      return;
    }
    sessionStorage.setItem(FLASH, form.dataset.done || "Done.");
    await go(form.dataset.next || response.headers.get("Location") || form.dataset.url);
  }

  // A field's value as JSON has it: a number input's a number (the
  // service checks it), a datetime-local input's an instant in UTC (the
  // page shows and asks for UTC), a boolean's select true or false, any
  // other the text.
  function value(input) {
    if (input.type === "number" && !Number.isNaN(input.valueAsNumber)) return input.valueAsNumber;
    if (input.dataset.type === "boolean") return input.value === "true";
    if (input.type === "datetime-local") {
      return (input.value.length === 16 ? input.value + ":00" : input.value) + "Z";
    }
    return input.value;
  }

  document.addEventListener("submit", (event) => {
    const form = event.target;
    if (form.matches("form.record")) {
      event.preventDefault();
      const fields = {};
      for (const input of form.querySelectorAll("input[name], select[name]")) {
        if (input.type === "checkbox") {
          fields[input.name] = input.checked;                  // unticked: false
          continue;
        }
        if (input.value === "" && !input.required) continue;   // an optional field left empty: absent
        fields[input.name] = value(input);
      }
      send(form, form.dataset.method, JSON.stringify(fields));
    } else if (form.matches("form.token")) {
      event.preventDefault();
      sessionStorage.setItem(TOKEN, form.elements.token.value.trim());
      retried = true;
      go(location.href);
    } else if (form.matches("form.search") && token()) {
      event.preventDefault();
      go(form.action + "?" + new URLSearchParams(new FormData(form)));
    }
  });

  document.addEventListener("click", (event) => {
    const button = event.target.closest("button[data-action]");
    if (button && button.dataset.action === "delete") {
      const form = button.form;
      if (window.confirm(form.dataset.confirm)) send(form, "DELETE");
      return;
    }
    if (button && button.dataset.action === "forget-token") {
      sessionStorage.removeItem(TOKEN);
      location.reload();
      return;
    }
    // With a token, links to other pages are fetched with it.
    const link = event.target.closest("a[href]");
    if (!link || !token() || link.type || link.origin !== location.origin
        || event.ctrlKey || event.metaKey || event.shiftKey || event.button !== 0) return;
    event.preventDefault();
    go(link.href);
  });

  window.addEventListener("popstate", () => go(location.href));

  // What a page shows when it is opened: the last write's outcome, whether
  // a token is in use, and a page refused for want of the token, fetched
  // again with it.
  function start() {
    const flash = sessionStorage.getItem(FLASH);
    if (flash) {
      sessionStorage.removeItem(FLASH);
      document.querySelector(".flash").textContent = flash;
    }
    document.querySelector(".token-status").hidden = !token();
    if (document.body.dataset.status === "401" && token() && !retried) {
      retried = true;
      go(location.href);
    }
  }

  start();
})();
