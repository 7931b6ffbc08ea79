// Streams the Ask page's draft, then swaps in the verified result rendered by the server.
// Without this script the form posts and the server answers with the same result page.
"use strict";

(function () {
  const form = document.getElementById("ask-form");
  if (!form || !window.fetch || !window.TextDecoder) { return; }
  const streamBox = document.getElementById("stream");
  const draft = document.getElementById("stream-text");
  const status = document.getElementById("stream-status");
  const slot = document.getElementById("result-slot");
  const trail = [];  // the order events arrived in, kept for whoever inspects the page

  function note(kind) {
    trail.push(kind);
    document.body.dataset.streamEvents = trail.join(" ");
  }

  function handle(event) {
    if (event.type === "token") {
      draft.textContent += event.text.replace(/\s*\[src:[0-9a-f]{8}\]/gi, "");
      note("token");
    } else if (event.type === "verification") {
      status.textContent = "Verifying the claims…";
      note("verification");
    } else if (event.type === "error") {
      if (event.tokens_invalidated) { draft.textContent = ""; }  // no answer came of it
      status.textContent = (event.problem && (event.problem.detail || event.problem.title)) ||
        "The answer failed.";
      note("error");
      return event.problem && event.problem.request_id;
    } else if (event.type === "envelope") {
      note("envelope");
      document.getElementById("stream-state").textContent = event.output_state;
      document.getElementById("stream-record").textContent =
        (event.ledger_summary && event.ledger_summary.record_id) || "";
      if (event.tokens_invalidated) {
        draft.textContent = "";
        status.textContent = "The draft is withdrawn: it is not the verified answer.";
      } else {
        status.textContent = "Verified: see the result below.";
      }
      return event.request_id;
    }
    return null;
  }

  async function showResult(requestId) {
    const response = await fetch("/ui/ask/result/" + encodeURIComponent(requestId),
                                 {credentials: "same-origin"});
    if (!response.ok) { status.textContent = "The recorded answer could not be shown."; return; }
    slot.innerHTML = await response.text();
    note("result");
    // The verified result replaces the draft; the draft stays in the trail only.
    streamBox.hidden = true;
    history.replaceState(null, "", "/ui/ask?request_id=" + encodeURIComponent(requestId));
    const result = document.getElementById("result");
    if (result) { result.setAttribute("tabindex", "-1"); result.focus(); }
  }

  form.addEventListener("submit", async function (e) {
    const question = form.elements.question.value.trim();
    if (!question) { return; }
    e.preventDefault();
    const button = form.querySelector("button[type=submit]");
    button.disabled = true;
    trail.length = 0;
    draft.textContent = "";
    slot.innerHTML = "";
    status.textContent = "Generating…";
    streamBox.hidden = false;
    let requestId = null;
    try {
      const response = await fetch(form.dataset.stream, {
        method: "POST", credentials: "same-origin",
        headers: {"Content-Type": "application/json",
                  "X-CSRF-Token": form.elements.csrf.value},
        body: JSON.stringify({query: question})});
      if (!response.ok || !response.body) {
        status.textContent = "The question was refused (" + response.status + ").";
        return;
      }
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      let buffer = "";
      for (;;) {
        const chunk = await reader.read();
        if (chunk.done) { break; }
        buffer += decoder.decode(chunk.value, {stream: true});
        let end;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = block.split("\n").filter(l => l.startsWith("data:"))
            .map(l => l.slice(5).trim()).join("\n");
          if (data) { requestId = handle(JSON.parse(data)) || requestId; }
        }
      }
      if (requestId) { await showResult(requestId); }
    } catch (err) {
      status.textContent = "The stream broke off; the request is still recorded in the ledger.";
    } finally {
      button.disabled = false;
    }
  });
})();
