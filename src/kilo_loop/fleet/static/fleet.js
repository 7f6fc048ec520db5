// The many-runs view: polls the runs list and the inbox, follows one run's events live.
"use strict";

const state = { selected: null, stream: null, lastSeq: 0 };
const $ = (sel) => document.querySelector(sel);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return node;
}

async function api(path, body) {
  const init = body === undefined ? {} : {
    method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body),
  };
  const response = await fetch(path, { credentials: "same-origin", ...init });
  if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
  return response.json();
}

function money(value) { return `$${Number(value || 0).toFixed(4)}`; }

function countdown(until, now) {
  const seconds = Math.max(0, Math.round(until - now));
  return seconds >= 60 ? `${Math.floor(seconds / 60)} min ${seconds % 60} s` : `${seconds} s`;
}

function bar(percent) {
  const fill = el("span");
  fill.style.width = `${percent}%`; // CSSOM, not a style attribute: the page's CSP allows only this
  return el("div", { class: "bar", role: "progressbar", "aria-valuenow": percent }, fill);
}

function renderRuns(data) {
  const body = $("#runs tbody");
  body.replaceChildren(...data.runs.map((run) => {
    const percent = run.stagesTotal ? Math.round((100 * run.stagesDone) / run.stagesTotal) : 0;
    const row = el("tr", { "data-run": run.runId, onclick: () => select(run.runId, run.title) },
      el("td", {}, run.title, el("div", { class: "muted" }, run.runId)),
      el("td", {}, el("span", { class: "pill", "data-status": run.status }, run.status),
        run.quotaUntil ? el("div", { class: "muted" }, `quota resets in ${countdown(run.quotaUntil, data.now)}`) : ""),
      el("td", {}, `${run.stagesDone} / ${run.stagesTotal}`,
        bar(percent)),
      el("td", {}, run.maxIterations ? `${run.iteration} / ${run.maxIterations}` : String(run.iteration)),
      el("td", {}, money(run.cost)),
      el("td", { class: "muted" }, run.worker || "—"));
    if (run.runId === state.selected) row.classList.add("selected");
    return row;
  }));
  const live = data.runs.filter((run) => run.live).length;
  $("#summary").textContent = `${data.runs.length} run(s), ${live} live`;
  const paused = $("#paused");
  paused.hidden = data.pausedBackends.length === 0;
  paused.textContent = data.pausedBackends
    .map((p) => `Backend ${p.backend} is out of quota: its jobs wait, resuming in ${countdown(p.until, data.now)}`)
    .join(" · ");
}

function questionForm(runId, question) {
  const input = el("input", { type: "text", "aria-label": "Your answer", placeholder: "Type an answer" });
  const send = (answer) => api(`/api/runs/${encodeURIComponent(runId)}/answer`, { answers: [answer] })
    .then(refresh).catch((error) => alert(error.message));
  const options = (question.options || []).map((option) =>
    el("button", { type: "button", onclick: () => send(option) }, option));
  return el("form", { onsubmit: (event) => { event.preventDefault(); if (input.value.trim()) send(input.value); } },
    input, el("button", { type: "submit" }, "Answer"), ...options);
}

function renderInbox(data) {
  const box = $("#inbox");
  if (!data.items.length) {
    box.replaceChildren(el("p", { class: "muted" }, "No run is waiting for an answer."));
    return;
  }
  box.replaceChildren(...data.items.flatMap((item) => item.questions.map((question) =>
    el("div", { class: "question" }, el("strong", {}, item.title), " ", el("span", { class: "muted" }, item.runId),
      el("div", {}, question.question), questionForm(item.runId, question)))));
}

function addLog(event) {
  const log = $("#log");
  log.append(el("li", { class: event.level || "info" }, `${event.ts ? event.ts.slice(11, 19) : ""}  ${event.message}`));
  while (log.children.length > 1000) log.firstChild.remove();
  log.scrollTop = log.scrollHeight;
}

function select(runId, title) {
  if (state.stream) state.stream.close();
  state.selected = runId;
  $("#detail").hidden = false;
  $("#detail-title").textContent = title;
  $("#detail-status").textContent = runId;
  $("#log").replaceChildren();
  state.stream = new EventSource(`/api/runs/${encodeURIComponent(runId)}/events`);
  state.stream.onmessage = (message) => addLog(JSON.parse(message.data));
  document.querySelectorAll("#runs tr").forEach((row) => row.classList.toggle("selected", row.dataset.run === runId));
}

async function refresh() {
  try {
    const [runs, inbox] = await Promise.all([api("/api/runs"), api("/api/inbox")]);
    renderRuns(runs);
    renderInbox(inbox);
  } catch (error) {
    $("#summary").textContent = error.message;
  }
}

// The token came in the link; the server has put it in a cookie, so it leaves the address bar (and history).
if (new URLSearchParams(location.search).has("token")) history.replaceState(null, "", location.pathname);

document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll(".controls button").forEach((button) => {
    button.addEventListener("click", () => {
      if (!state.selected) return;
      api(`/api/runs/${encodeURIComponent(state.selected)}/control`, { action: button.dataset.action })
        .then(refresh).catch((error) => alert(error.message));
    });
  });
  refresh();
  setInterval(refresh, 1000);
});
