// The review gate panel: every finding of every reviewer, each marked Mitigate now or Defer,
// plus a free-text change request; submitted to POST /api/review/gate. Self-contained: it reads
// /api/state itself and takes over from the generic question dialog while a gate is open.
(() => {
  "use strict";

  const POLL_MS = 1000;
  let shownKey = "";
  let sending = false;

  function el(tag, attrs = {}, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs)) {
      if (key === "text") node.textContent = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else if (value === true) node.setAttribute(key, "");
      else if (value !== false && value != null) node.setAttribute(key, String(value));
    }
    for (const child of children) if (child != null) node.append(child);
    return node;
  }

  function dialog() {
    let modal = document.getElementById("review-gate-modal");
    if (modal) return modal;
    modal = el("dialog", { id: "review-gate-modal", class: "modal", "aria-labelledby": "review-gate-title" },
      el("form", { method: "dialog", class: "modal__body", id: "review-gate-form", onsubmit: submit },
        el("h2", { id: "review-gate-title", text: "Review gate" }),
        el("p", { id: "review-gate-summary", class: "muted" }),
        el("ul", { id: "review-gate-reviewers", class: "review-gate__reviewers" }),
        el("ul", { id: "review-gate-tamper", class: "review-gate__tamper", hidden: true }),
        el("div", { id: "review-gate-rows" }),
        el("label", { class: "field" }, el("span", { text: "Change request (optional)" }),
          el("textarea", { id: "review-gate-change", rows: 3, maxlength: 8000,
            placeholder: "Anything else the implementer should change in the same fix pass" })),
        el("div", { class: "actions" },
          el("button", { type: "submit", id: "review-gate-submit", class: "primary", text: "Send decision" }),
          el("button", { type: "button", id: "review-gate-defer", text: "Defer all",
            onclick: () => { for (const r of rowInputs("defer")) r.checked = true; } }))));
    document.body.append(modal);
    return modal;
  }

  function rowInputs(mark) {
    return [...document.querySelectorAll(`#review-gate-rows input[value="${mark}"]`)];
  }

  function where(row) {
    if (!row.file) return "";
    return row.line ? ` — ${row.file}:${row.line}` : ` — ${row.file}`;
  }

  function renderRow(row, index) {
    const name = `review-row-${index}`;
    const choice = (mark, label, checked) => el("label", { class: "review-gate__mark" },
      el("input", { type: "radio", name, value: mark, "data-row": row.id, checked }), ` ${label}`);
    const flags = [row.kind === "acceptance-gap" ? "acceptance gap" : "", row.preExisting ? "pre-existing" : ""]
      .filter(Boolean).join(", ");
    return el("fieldset", { class: "question review-gate__row", "data-row": row.id },
      el("legend", { text: `${index + 1}. [${row.role}/${row.severity}] ${row.title}${where(row)}` }),
      flags ? el("p", { class: "muted", text: flags }) : null,
      row.detail ? el("p", { text: row.detail }) : null,
      el("div", { class: "options" }, choice("mitigate", "Mitigate now", false), choice("defer", "Defer", true)));
  }

  // One line per reviewer, those who found nothing included (seed 004: one gate, one summary each).
  function reviewerLine(entry) {
    const found = entry.findings
      ? `${entry.findings} finding(s) (${entry.severities}), ${entry.blocking} blocking` : "no findings";
    const cost = entry.tokens == null ? "" : ` · ${entry.tokens} tokens $${Number(entry.cost).toFixed(4)}`;
    return el("li", { class: "review-gate__reviewer", "data-role": entry.role },
      el("strong", { text: `${entry.label}: ${entry.verdict}` }), ` — ${found}${cost}`,
      entry.summary ? el("span", { class: "muted", text: ` — ${entry.summary}` }) : null);
  }

  function show(gate) {
    const modal = dialog();
    document.getElementById("review-gate-title").textContent = `Review gate — ${gate.stageTitle || gate.stageId}`;
    const counts = (gate.counts || []).join(" → ") || "—";
    const label = gate.label || `loop exit: ${gate.exit}`;
    const what = label.charAt(0).toUpperCase() + label.slice(1);
    document.getElementById("review-gate-summary").textContent = gate.exit === "recheck"
      ? `${what} · ${gate.rows.length} finding(s)`
      : `${what} · blocking counts per round: ${counts} · ${gate.rows.length} finding(s)`;
    document.getElementById("review-gate-reviewers").replaceChildren(...(gate.reviewers || []).map(reviewerLine));
    // What the loop's own tamper check said of the stage (no model involved).
    const tamper = gate.tamper || [];
    const tamperList = document.getElementById("review-gate-tamper");
    tamperList.replaceChildren(...tamper.map((line) => el("li", { text: `Test tampering: ${line}` })));
    tamperList.hidden = !tamper.length;
    document.getElementById("review-gate-rows").replaceChildren(...gate.rows.map(renderRow));
    // A clean pass has nothing to mark: one click continues.
    document.getElementById("review-gate-submit").textContent = gate.rows.length ? "Send decision" : "Continue";
    document.getElementById("review-gate-defer").hidden = !gate.rows.length;
    document.getElementById("review-gate-change").value = "";
    // The generic question dialog would cover this one: answer it "later" through its own button.
    const questions = document.getElementById("question-modal");
    if (questions && questions.open) document.getElementById("question-later").click();
    if (!modal.open) modal.showModal();
  }

  async function submit(event) {
    event.preventDefault();
    if (sending) return;
    const marks = {};
    for (const input of document.querySelectorAll("#review-gate-rows input:checked")) {
      marks[input.dataset.row] = input.value;
    }
    const changeRequest = document.getElementById("review-gate-change").value.trim();
    sending = true;
    try {
      const response = await fetch("/api/review/gate", {
        method: "POST", credentials: "same-origin", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ marks, changeRequest }),
      });
      const data = await response.json().catch(() => ({}));
      if (!response.ok) throw new Error(data.error || `HTTP ${response.status}`);
      document.getElementById("review-gate-modal").close("sent");
      const rows = document.querySelectorAll("#review-gate-rows fieldset").length;
      say(data.mitigate || changeRequest ? "Fix pass sent to the implementer"
        : rows ? "Every finding deferred" : "Review passed: continuing");
    } catch (error) {
      say(`Review gate: ${error.message}`);
    } finally {
      sending = false;
    }
  }

  function say(message) {
    const box = document.getElementById("notice");
    if (!box) return;
    box.textContent = message;
    box.hidden = false;
  }

  async function poll() {
    try {
      const response = await fetch("/api/state", { credentials: "same-origin" });
      if (response.ok) update(await response.json());
    } catch (_) {
      // the dashboard shows connection trouble itself
    }
    setTimeout(poll, POLL_MS);
  }

  // Every review round of the run: its verdict, and each reviewer's findings, tokens and cost.
  function renderCard(state) {
    const rounds = ((state && state.iterations) || []).filter((item) => item && item.review);
    let card = document.getElementById("review-card");
    if (!rounds.length) {
      if (card) card.hidden = true;
      return;
    }
    if (!card) {
      card = el("section", { id: "review-card", class: "card" }, el("h2", { text: "Review" }),
        el("table", { class: "review-card__table" }, el("thead", {}, el("tr", {},
          ...["#", "step", "verdict", "blocking", "reviewer", "findings", "tokens", "cost"]
            .map((name) => el("th", { text: name })))), el("tbody", { id: "review-card-rows" })));
      const run = document.getElementById("view-run") || document.querySelector("main");
      run.append(card);
    }
    card.hidden = false;
    const rows = [];
    for (const item of rounds) {
      const review = item.review;
      const roles = review.roles.length ? review.roles : [null];
      for (const role of roles) {
        rows.push(el("tr", { "data-iteration": item.iteration },
          el("td", { text: String(item.iteration) }), el("td", { text: review.step }),
          el("td", { text: review.verdict }), el("td", { text: String(review.count) }),
          el("td", { text: role ? role.role + (role.finalPass ? " (final)" : "") : "—" }),
          el("td", { text: role ? `${role.findings} (${role.verdict})` : "—" }),
          el("td", { text: role ? String(role.tokens) : "—" }),
          el("td", { text: role ? `$${role.cost.toFixed(4)}` : "—" })));
      }
    }
    document.getElementById("review-card-rows").replaceChildren(...rows);
  }

  function update(state) {
    renderCard(state);
    const gate = state && state.reviewGate;
    const waiting = gate && (state.pendingQuestions || []).length > 0;
    const modal = document.getElementById("review-gate-modal");
    if (!waiting) {
      shownKey = "";
      if (modal && modal.open) modal.close("gone");
      return;
    }
    const key = JSON.stringify([gate.stageId, gate.rows.map((row) => row.id), state.iteration]);
    if (key === shownKey && modal && modal.open) return;
    if (key === shownKey) return; // closed by the operator after sending: wait for the next gate
    shownKey = key;
    show(gate);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", poll);
  else poll();
})();
