// usersvc's pages: what HTML forms cannot do by themselves.
//
// Every page reads without this script. It adds the writes (create, edit
// with the ETag the page was shown at as If-Match, delete), each sent as
// JSON, and shows what the service answered in the form's role="alert"
// elements, each field's error beside it. With tokens on, the token a
// person enters is kept for this tab (sessionStorage) and sent as
// "Authorization: Bearer"; pages are then fetched with it, never with the
// token in a cookie or a URL. A collection's page and a record's follow
// the collection's changes as they happen (Server-Sent Events, read with
// fetch so that the token goes too): the table is read again, its new,
// changed and deleted rows marked; a record's page says when the record
// was changed or deleted elsewhere, and leaves the form as it is.
"use strict";

(function () {
  const TOKEN = "usersvc-token";
  const FLASH = "usersvc-flash";
  let retried = false;
  let following = null;       // the AbortController of this page's streams of changes
  let follows = [];           // what this page follows: { url, seen, last }
  let saving = false;         // a write of this page's is on its way

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
    saving = true;
    const more = {};
    if (body !== undefined) more["Content-Type"] = "application/json";
    if (form.dataset.etag) more["If-Match"] = form.dataset.etag;
    let response;
    try {
      response = await fetch(form.dataset.url, { method, headers: headers(more), body });
    } catch (e) {
      saving = false;
      say(form, "", "The service did not answer: " + e.message);
      return;
    }
    if (!response.ok) {
      saving = false;
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

  // A stream of changes (text/event-stream): seen(null) each time it
  // (re)opens, so the page can catch up with what it may have missed,
  // then seen({kind, entry}) for each change; after the stream's end or a
  // lost connection, again after its retry, from the last event's id
  // (kept in the followed, so that a page back from the browser's cache
  // resumes there too).
  async function follow(followed, signal) {
    const { url, seen } = followed;
    let retry = 2000;
    while (!signal.aborted) {
      try {
        const more = { Accept: "text/event-stream" };
        if (followed.last !== null) more["Last-Event-ID"] = followed.last;
        const response = await fetch(url, { headers: headers(more), signal, cache: "no-store" });
        if (response.status === 406) {  // a server that does not wait for changes (no stream):
          turnedAway(followed, retry, 0);   // not live; the page read again at each retry
          seen(null);
          await new Promise((resolve) => setTimeout(resolve, retry));
          continue;
        }
        if (!response.ok) return;       // a feed this tab may not read
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += value;
          let end;
          while ((end = buffer.indexOf("\n\n")) >= 0) {
            const fields = {};
            for (const line of buffer.slice(0, end).split("\n")) {
              const at = line.indexOf(":");
              if (at === 0) continue;                     // a comment: keep-alive
              fields[at < 0 ? line : line.slice(0, at)] = at < 0 ? "" : line.slice(at + 1).trim();
            }
            buffer = buffer.slice(end + 2);
            if (fields.retry) retry = Number(fields.retry);
            if (fields.event === "busy") {      // not live: read the page again instead
              turnedAway(followed, retry, JSON.parse(fields.data || "{}").places);
              seen(null);
              continue;
            }
            if (fields.id !== undefined) placed(followed);
            if (fields.id !== undefined) followed.last = fields.id;
            if (fields.event === "reset") {       // another history of the store (restarted):
              await go(location.href);            // what the page shows is not it; read it again
              return;
            }
            if (fields.data !== undefined) {
              seen({ kind: fields.event, entry: JSON.parse(fields.data) });
            } else if (fields.id !== undefined) {
              seen(null);                                 // (re)opened: catch up
            }
          }
        }
      } catch (e) { /* the connection went, or the page did: see below */ }
      if (!signal.aborted) await new Promise((resolve) => setTimeout(resolve, retry));
    }
  }

  // Past the server's waiting places a stream is turned away (an event
  // "busy", then its end): the page's status line, where it says it is
  // live, says it is not, and the page reads its URL again at each retry
  // (seen(null), as when a stream opens), until a stream read again after
  // the retry gets a place; then the line says again what it said.
  function turnedAway(followed, retry, places) {
    const status = document.querySelector(".live");
    if (!status) return;
    if (followed.said === undefined) followed.said = status.textContent;
    status.textContent = places === 0
      ? `Not live: this server sends no changes as they happen; reading the page again every ${retry / 1000} s.`
      : `Not live: the server is busy; trying again every ${retry / 1000} s.`;
  }
  function placed(followed) {
    if (followed.said === undefined) return;
    document.querySelector(".live").textContent = followed.said;
    followed.said = undefined;
  }

  // Follow what the page follows, from where each stream left off. A page
  // the browser keeps when it is left (the back/forward cache) lets go of
  // its streams (pagehide): a stream held open by a page no one sees
  // would keep one of the server's few waiting places from the page the
  // person went to. Shown again, it follows again, and catches up.
  function resume() {
    following = new AbortController();
    for (const followed of follows) follow(followed, following.signal);
  }
  window.addEventListener("pagehide", () => { if (following) following.abort(); });
  window.addEventListener("pageshow", (event) => { if (event.persisted) resume(); });

  // A collection's page: its table read again (at most every 0.2 s) after
  // any change, each row marked as the changes said: "new" (changed, and
  // not on the page as it was opened), "changed", "deleted". A mark is a
  // word in the row, not a colour alone, and the page's status line (a
  // polite live region) says how many rows are marked, so that a screen
  // reader hears of them.
  function liveTable(table) {
    const marks = new Map();
    const said = { new: "New since this page was opened", changed: "Changed since this page " +
                   "was opened", deleted: "Deleted since this page was opened" };
    const opened = new Set([...table.querySelectorAll("tbody tr")].map((row) => row.dataset.id));
    const status = document.querySelector(".live");
    let timer = null;
    let served = table.querySelector("tbody").innerHTML;    // the rows as last sent, unmarked
    let news = false;                                       // a change since the last read
    function mark(row, kind) {
      row.classList.remove("new", "changed", "deleted");
      row.classList.add(kind);
      row.title = said[kind];
      let word = row.cells[0].querySelector(".mark");
      if (!word) {
        word = document.createElement("span");
        word.className = "mark";
        row.cells[0].append(" ", word);
      }
      word.textContent = kind;
    }
    async function refresh() {
      timer = null;
      const heard = news;       // (a change heard while this read is on its way: read again)
      news = false;
      let page;
      try {
        const response = await fetch(location.href, { headers: headers({ Accept: "text/html" }),
                                                      signal: following.signal,
                                                      cache: "no-store" });
        if (response.ok) {
          page = new DOMParser().parseFromString(await response.text(), "text/html");
        }
      } catch (e) { /* below */ }
      const fresh = page && page.querySelector("[data-live] tbody");
      const shown = table.querySelector("tbody");
      if (!fresh || !shown) {                 // not read: what was heard waits for the next
        news = news || heard;
        return;
      }
      // Read again and the same, with no change heard (the stream opened
      // again): the rows are left as they are, and the person's pointer on them.
      if (fresh.innerHTML === served && !heard) return;
      served = fresh.innerHTML;
      for (const row of fresh.rows) {         // (a row moved in by others' changes: unmarked)
        let kind = marks.get(row.dataset.id);
        if (kind === "changed" && !opened.has(row.dataset.id)) kind = "new";
        if (kind) mark(row, kind);
      }
      // Gone: deleted ones stay, marked, where they were (after the row
      // that was before them), not moved to the table's end.
      let previous = null;
      for (const row of [...shown.rows]) {
        const id = row.dataset.id;
        const kept = fresh.querySelector(`tr[data-id="${id}"]`);
        if (kept) {
          previous = kept;
        } else if (marks.get(id) === "deleted") {
          mark(row, "deleted");
          if (previous) previous.after(document.adoptNode(row));
          else fresh.prepend(document.adoptNode(row));
          previous = row;
        }
      }
      shown.replaceWith(document.adoptNode(fresh));
      const summary = page.querySelector(".summary");
      if (summary) document.querySelector(".summary").textContent = summary.textContent;
      const counted = ["new", "changed", "deleted"].map(
        (kind) => [fresh.querySelectorAll(`tr.${kind}`).length, kind]).filter(([n]) => n);
      if (counted.length) {
        status.textContent = "Since this page was opened: " +
          counted.map(([n, kind]) => `${n} ${kind}`).join(", ") + ".";
      }
    }
    follows.push({ url: table.dataset.live, last: null, seen: (change) => {
      if (change) {
        marks.set(String(change.entry.id), change.kind === "delete" ? "deleted" : "changed");
        news = true;
      }
      if (!timer) timer = setTimeout(refresh, 200);
    } });
  }

  // A record's page: told when the record is changed or deleted elsewhere
  // (the page's own edits and delete are not that), its form left alone.
  function liveRecord(record) {
    const notice = document.querySelector(".live");
    const kind = record.dataset.kind;
    function tell(deleted) {
      notice.textContent = deleted
        ? `This ${kind} was deleted elsewhere.`
        : `This ${kind} was changed elsewhere after this page was loaded: reload the page to ` +
          "see it as it is now (what you typed here stays until you do).";
    }
    async function check() {      // caught up: has it changed since the page was made?
      try {
        const response = await fetch(record.dataset.url, { signal: following.signal,
                                                           cache: "no-store",
          headers: headers({ Accept: "text/html", "If-None-Match": record.dataset.etag }) });
        if (response.status === 404) tell(true);
        else if (response.status === 200 && !saving) tell(false);
      } catch (e) { /* asked again when the stream opens again */ }
    }
    follows.push({ url: record.dataset.live, last: null, seen: (change) => {
      if (!change) check();
      else if (String(change.entry.id) === record.dataset.id && !saving) {
        tell(change.kind === "delete");
      }
    } });
  }

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
    if (following) following.abort();         // the page it followed for is gone
    follows = [];
    const table = document.querySelector("[data-live].table");
    const record = document.querySelector("dl.record[data-live]");
    if (table) liveTable(table);
    if (record) liveRecord(record);
    resume();
    if (document.body.dataset.status === "401" && token() && !retried) {
      retried = true;
      go(location.href);
    }
  }

  start();
})();
