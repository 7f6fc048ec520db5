/* kilo-loop dashboard: plain JS, no build step, no CDN. Everything the server sends is
   untrusted text (agent output): it is only ever placed with textContent, never as HTML. */
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const SVG_NS = "http://www.w3.org/2000/svg";
  const LOG_MAX_LINES = 1000;
  const PAGE = 50;
  const STALE_AFTER_MS = 4000;
  const FINAL = new Set(["done", "done-with-errors", "error", "aborted", "stopped-budget", "stalled", "stopped-guard"]);

  const S = {
    mode: "launcher",
    run: null, // the run on screen: the live snapshot, or a saved run
    live: false, // true while the run on screen is the active one (fed by SSE)
    iterations: new Map(),
    offset: 0,
    total: 0,
    seq: 0,
    source: null,
    stale: false,
    staleTimer: null,
    goals: [],
    defaultsApplied: false,
    busy: false,
    dismissedQuestions: "",
    sharedWanted: undefined, // a choice sent to the server but not yet seen in a state frame
    pausedWanted: undefined,
    renderQueued: false,
    cardCache: new Map(),
    checkpointTimer: null,
    activeRunId: null,
    nowTools: [], // the last tool lines of the current iteration
    nowDoing: "", // the last thing the agent said or did
    logFilter: "all",
    logSearch: "",
    chartMode: "cost",
    budget: null, // the run's --max-cost / --max-tokens (live runs)
    receiptsTimer: null,
  };

  // ------------------------------------------------------------------ helpers
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    applyAttrs(el, attrs);
    appendAll(el, children);
    return el;
  }

  function s(tag, attrs, ...children) {
    const el = document.createElementNS(SVG_NS, tag);
    applyAttrs(el, attrs);
    appendAll(el, children);
    return el;
  }

  function applyAttrs(el, attrs) {
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === "text") el.textContent = String(value);
      else if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
      else el.setAttribute(key, value === true ? "" : String(value));
    }
  }

  function appendAll(el, children) {
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      el.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
  }

  function fill(el, ...children) {
    el.replaceChildren();
    appendAll(el, children);
  }

  async function api(path, options = {}) {
    const init = { method: options.method || "GET", headers: {}, credentials: "same-origin" };
    if (options.body !== undefined) {
      init.method = options.method || "POST";
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(options.body);
    }
    const response = await fetch(path, init);
    const type = response.headers.get("content-type") || "";
    const data = type.includes("json") ? await response.json() : await response.text();
    if (!response.ok) {
      const error = new Error((data && data.error) || `HTTP ${response.status}`);
      error.status = response.status;
      throw error;
    }
    return data;
  }

  let noticeTimer = null;
  function notify(message, kind = "info") {
    const box = $("notice");
    box.textContent = message;
    box.dataset.kind = kind;
    box.hidden = false;
    clearTimeout(noticeTimer);
    noticeTimer = setTimeout(() => { box.hidden = true; }, kind === "error" ? 9000 : 5000);
  }

  async function attempt(action, success) {
    try {
      const result = await action();
      if (success) notify(typeof success === "function" ? success(result) : success);
      return result;
    } catch (error) {
      notify(error.message, "error");
      return undefined;
    }
  }

  function fmtTokens(count) {
    const n = Number(count) || 0;
    if (n >= 1e6) return `${(n / 1e6).toFixed(1)}M`;
    if (n >= 1e3) return `${(n / 1e3).toFixed(1)}k`;
    return String(n);
  }

  function fmtCost(cost) {
    const c = Number(cost) || 0;
    return c < 1 ? `$${c.toFixed(4)}` : `$${c.toFixed(2)}`;
  }

  function fmtBytes(size) {
    const n = Number(size) || 0;
    if (n >= 1048576) return `${(n / 1048576).toFixed(1)} MB`;
    if (n >= 1024) return `${(n / 1024).toFixed(1)} KB`;
    return `${n} B`;
  }

  function fmtTime(ts) {
    if (!ts) return "";
    const d = new Date(ts);
    return Number.isNaN(d.getTime()) ? "" : d.toLocaleTimeString([], { hour12: false });
  }

  function fmtDate(ts) {
    if (!ts) return "—";
    const d = new Date(ts);
    return Number.isNaN(d.getTime()) ? ts : d.toLocaleString([], { hour12: false });
  }

  function runPath(suffix = "") {
    return `/api/runs/${encodeURIComponent(S.run.runId)}${suffix}`;
  }

  // ------------------------------------------------------------------ top bar
  function topbarState(status, stale) {
    if (!status || status === "idle") return "idle";
    if (stale && !FINAL.has(status)) return "stale";
    return status;
  }

  function setTopbar() {
    const status = S.run ? displayStatus(S.run) : "idle";
    const state = topbarState(status, S.stale && S.live);
    $("topbar").className = `topbar topbar--${state}`;
    const pill = $("status-pill");
    pill.textContent = state === "stale" ? `${statusText(status)} (connection lost)` : statusText(status);
    pill.dataset.status = state;
    $("topbar-title").textContent = S.run ? S.run.goalTitle || S.run.runId : (S.mode === "launcher" ? "Launcher" : "Dashboard");
  }

  function setStale(stale) {
    clearTimeout(S.staleTimer);
    S.staleTimer = null;
    if (S.stale !== stale) {
      S.stale = stale;
      setTopbar();
    }
  }

  // ------------------------------------------------------------------ views
  function show(view) {
    for (const name of ["launcher", "run", "runs"]) {
      $(`view-${name}`).hidden = name !== view;
      $(`nav-${name}`).classList.toggle("nav-btn--active", name === view);
    }
    $("nav-run").hidden = !S.run;
    if (view === "launcher") setTopbarForLauncher();
    else setTopbar();
  }

  function setTopbarForLauncher() {
    setTopbar();
    if (!S.run || !S.live || FINAL.has(S.run.status)) {
      $("topbar").className = "topbar topbar--idle";
      $("status-pill").textContent = S.busy ? "run active" : "launcher";
      $("status-pill").dataset.status = "idle";
      $("topbar-title").textContent = "Launcher";
    }
  }

  // ------------------------------------------------------------------ launcher
  function selectedPlan() {
    const file = $("plan-select").value;
    return S.goals.find((plan) => plan.file === file) || null;
  }

  async function loadGoals() {
    const data = await attempt(() => api("/api/goals"));
    if (!data) return;
    S.goals = data.goals || [];
    S.busy = Boolean(data.busy);
    S.activeRunId = data.activeRunId;
    const select = $("plan-select");
    const previous = select.value;
    select.replaceChildren(...S.goals.map((plan) => h("option", {
      value: plan.file,
      text: plan.error ? `⚠ ${plan.file} — ${plan.error}` : `${plan.title} — ${plan.done}/${plan.total} (${plan.percent}%) · ${plan.file}`,
    })));
    if (S.goals.some((plan) => plan.file === previous)) select.value = previous;
    $("plans-empty").hidden = S.goals.length > 0;
    if (!S.defaultsApplied && data.defaults) {
      const d = data.defaults;
      $("start-iterations").value = d.iterations || 5;
      $("start-agent").value = d.agent || "";
      $("start-hitl").value = d.hitl || "on-question";
      $("start-dry-run").checked = Boolean(d.dryRun);
      S.defaultsApplied = true;
    }
    $("global-verify").value = data.globalVerify || "";
    $("start-run").disabled = S.busy || !S.goals.length;
    $("start-busy").hidden = !S.busy;
    renderPlan();
    if ($("view-launcher").hidden === false) setTopbarForLauncher();
  }

  function renderPlan() {
    const plan = selectedPlan();
    const summary = $("plan-summary");
    const stages = $("plan-stages");
    for (const id of ["plan-mark-done", "plan-clear-done", "plan-delete"]) $(id).disabled = !plan;
    if (!plan) {
      summary.replaceChildren();
      stages.replaceChildren();
      return;
    }
    const last = plan.lastRun;
    const bar = h("div", { class: "progress__bar" });
    bar.style.width = `${plan.percent}%`;
    fill(summary,
      h("div", { class: "plan-summary__row" },
        h("span", { class: "chip", text: plan.type }),
        h("strong", { text: plan.title }),
        h("span", { class: "muted", text: plan.file })),
      h("div", { class: "plan-summary__row" },
        h("span", { text: `${plan.done}/${plan.total} stages done · ${plan.percent}%` }),
        last ? h("span", { class: "muted", text: `last run ${last.runId}: ${last.status}, ${last.iterations} it, ${fmtCost(last.cost)}` })
          : h("span", { class: "muted", text: "never run" })),
      h("div", { class: "progress" }, bar),
      plan.error ? h("p", { class: "error-text", text: plan.error }) : null,
    );
    const rows = (plan.stages || []).map((stage) => stageRow(plan, stage));
    if (plan.type === "json") rows.unshift(planVerifyRow(plan));
    fill(stages, ...rows);
  }

  function verifyEditor(value, onSave, label) {
    const input = h("input", { type: "text", value: value || "", placeholder: "verify command (empty: none)", maxlength: 4096, "aria-label": label });
    const save = h("button", { type: "button", text: "Save", onclick: () => onSave(input.value) });
    input.addEventListener("keydown", (event) => { if (event.key === "Enter") { event.preventDefault(); onSave(input.value); } });
    return h("div", { class: "inline-form" }, input, save);
  }

  function stageRow(plan, stage) {
    return h("div", { class: `stage-row${stage.done ? " stage-row--done" : ""}` },
      h("span", { class: "stage-row__mark", text: stage.done ? "✓" : "○" }),
      h("span", { class: "stage-row__title", text: stage.title }),
      verifyEditor(stage.verify, (verify) => saveVerify(plan.file, stage.index, verify), `verify for ${stage.title}`));
  }

  function planVerifyRow(plan) {
    return h("div", { class: "stage-row stage-row--plan" },
      h("span", { class: "stage-row__mark", text: "★" }),
      h("span", { class: "stage-row__title", text: "Plan-wide verify (all stages without their own)" }),
      verifyEditor(plan.verify, (verify) => saveVerify(plan.file, null, verify), "plan-wide verify"));
  }

  async function saveVerify(file, stageIndex, verify) {
    const body = { file, verify };
    if (stageIndex !== null) body.stageIndex = stageIndex;
    if (await attempt(() => api("/api/goals/verify", { body }), "Verify command saved in the plan file")) await loadGoals();
  }

  async function markPlan(done) {
    const plan = selectedPlan();
    if (!plan) return;
    const result = await attempt(() => api("/api/goals/done", { body: { file: plan.file, done } }),
      (r) => `${r.changed} stage(s) ${done ? "marked done" : "reopened"}`);
    if (result) await loadGoals();
  }

  async function deletePlan() {
    const plan = selectedPlan();
    if (!plan) return;
    const ok = await confirmDialog("Delete this plan?",
      `${plan.file} moves to .kilocode-loop/trash/ (git-ignored, recoverable). Nothing is committed.`, "Delete plan");
    if (!ok) return;
    const result = await attempt(() => api("/api/goals/trash", { body: { file: plan.file } }), (r) => `Moved to ${r.trashedTo}`);
    if (result) await loadGoals();
  }

  async function startRun(event, force = false) {
    if (event) event.preventDefault();
    const plan = selectedPlan();
    if (!plan) return;
    const body = {
      file: plan.file,
      iterations: Number.parseInt($("start-iterations").value, 10) || 1,
      hitl: $("start-hitl").value,
      dryRun: $("start-dry-run").checked,
    };
    const agent = $("start-agent").value.trim();
    if (agent) body.agent = agent;
    const extra = $("start-prompt-extra").value.trim();
    if (extra) body.promptExtra = extra;
    if (force) body.force = true;
    $("start-run").disabled = true;
    try {
      const result = await api("/api/start", { body });
      notify(`Run ${result.runId} started`);
      await loadState();
    } catch (error) {
      if (!force && /already done/.test(error.message)) {
        const again = await confirmDialog("Every stage is done", `${error.message}. Start anyway and rework every stage?`, "Start anyway");
        if (again) return startRun(null, true);
      } else {
        notify(error.message, "error");
      }
      $("start-run").disabled = S.busy;
    }
    return undefined;
  }

  async function saveGlobalVerify(event) {
    event.preventDefault();
    const verify = $("global-verify").value;
    const result = await attempt(() => api("/api/goals/verify-global", { body: { verify } }),
      (r) => (r.verify ? `Default verify for all runs: ${r.verify}` : "Default verify removed"));
    if (result) await loadGoals();
  }

  async function openLauncher() {
    show("launcher");
    await loadGoals();
  }

  // ------------------------------------------------------------------ run state
  async function loadState() {
    const state = await attempt(() => api("/api/state"));
    if (!state) return;
    S.mode = state.mode || S.mode;
    if (state.idle) {
      stopStream();
      S.run = null;
      S.live = false;
      await openLauncher();
      return;
    }
    adoptSnapshot(state, true);
    show("run");
    openStream();
  }

  function adoptSnapshot(snapshot, live) {
    S.run = snapshot;
    S.live = live;
    S.seq = snapshot.seq || 0;
    S.iterations = new Map();
    S.cardCache = new Map();
    $("iteration-cards").replaceChildren();
    for (const item of snapshot.iterations || []) S.iterations.set(item.iteration, item);
    S.offset = snapshot.iterationsOffset || 0;
    S.total = snapshot.iterationsTotal || S.iterations.size;
    $("log").replaceChildren();
    S.nowTools = [];
    S.nowDoing = "";
    S.budget = null;
    $("receipts-body").replaceChildren();
    for (const event of snapshot.logTail || []) appendLog(event);
    applyLogFilter();
    S.dismissedQuestions = "";
    renderRun();
    loadCheckpoints();
    loadReceipts();
  }

  function mergeHead(head) {
    if (!S.run || head.runId !== S.run.runId) return;
    if (head.status !== S.run.status) queueReceipts();
    const logTail = S.run.logTail;
    S.run = { ...S.run, ...head, logTail };
    for (const item of head.iterations || []) S.iterations.set(item.iteration, item);
    S.total = Math.max(S.total, head.iterationsTotal || 0);
    queueRender();
  }

  function queueRender() {
    if (S.renderQueued) return;
    S.renderQueued = true;
    requestAnimationFrame(() => {
      S.renderQueued = false;
      if (S.run) renderRun();
    });
  }

  // ------------------------------------------------------------------ event stream
  function stopStream() {
    if (S.source) S.source.close();
    S.source = null;
    setStale(false);
  }

  function openStream() {
    stopStream();
    if (!S.run || !S.live) return;
    const url = `/api/events?run=${encodeURIComponent(S.run.runId)}&after=${S.seq}`;
    const source = new EventSource(url);
    source.addEventListener("open", () => setStale(false));
    source.addEventListener("error", () => {
      if (!S.staleTimer && !S.stale) S.staleTimer = setTimeout(() => setStale(true), STALE_AFTER_MS);
    });
    source.addEventListener("hello", () => setStale(false));
    source.addEventListener("log", (message) => {
      const event = JSON.parse(message.data);
      if (event.seq <= S.seq) return;
      S.seq = event.seq;
      appendLog(event);
      onLogEvent(event);
    });
    source.addEventListener("state", (message) => mergeHead(JSON.parse(message.data)));
    source.addEventListener("run", () => { stopStream(); loadState(); });
    S.source = source;
  }

  function onLogEvent(event) {
    if (event.type === "checkpoint" || event.type === "revert") {
      clearTimeout(S.checkpointTimer);
      S.checkpointTimer = setTimeout(loadCheckpoints, 300);
    }
    if (["stage-done", "iteration-finished", "verify", "run-finished"].includes(event.type)) queueReceipts();
    if (S.run) renderNow(S.run);
  }

  // ------------------------------------------------------------------ log
  const DOING_TYPES = new Set(["text", "reasoning", "status", "verify", "question", "answer", "checkpoint", "session", "warning", "stage-done", "control"]);
  const ERROR_TYPES = new Set(["agent-error", "agent-failed", "crash", "guard-pre"]);
  const NOW_TOOLS = 5;

  function logKinds(event) {
    const kinds = [];
    const failedTool = event.type === "tool" && event.data && event.data.status === "error";
    const failedVerify = event.type === "verify" && event.data && event.data.passed === false;
    if (event.type === "tool") kinds.push("tools");
    if (event.level === "error" || event.level === "warn" || ERROR_TYPES.has(event.type) || failedTool || failedVerify) kinds.push("errors");
    if (event.type === "question" || event.type === "answer") kinds.push("questions");
    return kinds;
  }

  function lineVisible(line) {
    const filter = S.logFilter;
    if (filter !== "all" && line.dataset.section !== "1" && !(line.dataset.kinds || "").split(" ").includes(filter)) return false;
    return !S.logSearch || line.textContent.toLowerCase().includes(S.logSearch);
  }

  function applyLogFilter() {
    let shown = 0;
    for (const line of $("log").children) {
      line.hidden = !lineVisible(line);
      if (!line.hidden && line.dataset.section !== "1") shown += 1;
    }
    $("log-empty").hidden = shown > 0 || !$("log").childElementCount;
  }

  function setLogFilter(filter) {
    S.logFilter = filter;
    for (const button of $("log-filter").querySelectorAll("button")) {
      const on = button.dataset.filter === filter;
      button.classList.toggle("segmented__btn--on", on);
      button.setAttribute("aria-pressed", String(on));
    }
    applyLogFilter();
  }

  function appendLog(event) {
    const log = $("log");
    let line;
    if (event.type === "iteration-started" || event.type === "run-started") {
      line = h("div", { class: "log__section", text: event.message });
      line.dataset.section = "1";
    } else if (event.type === "tool") {
      const failed = event.data && event.data.status === "error";
      line = h("div", { class: `log__tool${failed ? " log__tool--error" : ""}`, text: event.message });
    } else {
      line = h("div", { class: `log__line log__line--${event.level || "info"} log__type--${event.type}` },
        h("time", { text: fmtTime(event.ts) }), " ", event.message);
    }
    line.dataset.seq = event.seq;
    line.dataset.kinds = logKinds(event).join(" ");
    line.hidden = !lineVisible(line);
    log.append(line);
    while (log.childElementCount > LOG_MAX_LINES) log.firstElementChild.remove();
    if (!line.hidden) $("log-empty").hidden = true;
    if ($("log-follow").checked) log.scrollTop = log.scrollHeight;
    noteForNow(event);
  }

  // What the "Now" panel shows: what the agent did last, and its last tool lines this iteration.
  function noteForNow(event) {
    if (event.type === "iteration-started" || event.type === "run-started") {
      S.nowTools = [];
      S.nowDoing = event.message || "";
    } else if (event.type === "tool") {
      // the tool list shows it; "doing" keeps the last thing the agent said, so no line shows twice
      S.nowTools = [...S.nowTools, event.message || ""].slice(-NOW_TOOLS);
    } else if (DOING_TYPES.has(event.type) && event.message) {
      S.nowDoing = event.message;
    }
  }

  // ------------------------------------------------------------------ time, progress, ETA (pure)
  function fmtDuration(ms) {
    if (ms === null || ms === undefined || !Number.isFinite(ms)) return "—";
    const total = Math.max(0, Math.round(ms / 1000));
    if (total < 60) return `${total}s`;
    const minutes = Math.floor(total / 60);
    const seconds = String(total % 60).padStart(2, "0");
    if (minutes < 60) return `${minutes}m ${seconds}s`;
    return `${Math.floor(minutes / 60)}h ${String(minutes % 60).padStart(2, "0")}m`;
  }

  function parseTime(ts) {
    const value = ts ? Date.parse(ts) : NaN;
    return Number.isNaN(value) ? null : value;
  }

  function stageCounts(run) {
    const stages = run.stages || [];
    const done = stages.filter((stage) => stage.status === "done").length;
    return { done: Math.max(done, (run.completedStages || []).length), total: stages.length };
  }

  // Elapsed time, the running iteration's time, the average of finished iterations and an ETA:
  // the iterations the stages left are likely to need (at this run's pace), capped by the budget.
  function runClock(run, items, now) {
    const started = parseTime(run.startedAt);
    const finished = parseTime(run.finishedAt);
    const final = FINAL.has(run.status);
    const elapsed = started === null ? null : ((final && finished !== null ? finished : now) - started);
    const done = items.filter((item) => item.outcome !== "running" && item.durationMs > 0);
    const average = done.length ? done.reduce((sum, item) => sum + item.durationMs, 0) / done.length : null;
    const running = final ? null : items.find((item) => item.outcome === "running") || null;
    const runningStart = running ? parseTime(running.startedAt) : null;
    const runningFor = runningStart === null ? null : Math.max(0, now - runningStart);
    let eta = null;
    if (!final && average !== null) {
      const counts = stageCounts(run);
      const finishedIterations = Math.max(0, (run.iteration || 0) - (running ? 1 : 0));
      const perStage = counts.done > 0 ? finishedIterations / counts.done : 1;
      const needed = Math.ceil((counts.total - counts.done) * perStage);
      const budgetLeft = Math.max(0, (run.maxIterations || 0) - finishedIterations);
      eta = Math.max(0, Math.min(needed, budgetLeft) * average - (runningFor || 0));
    }
    return { elapsed, average, running, runningFor, eta, final };
  }

  function displayStatus(run) {
    const status = run.status || "idle";
    const usedUp = status === "done-with-errors" && /iteration\(s\) used/.test(run.stopReason || "");
    const blocked = (run.stages || []).some((stage) => stage.status === "blocked");
    return usedUp && !blocked ? "iterations-used" : status;
  }

  function statusText(state) {
    return state.replace(/-/g, " ");
  }

  // ------------------------------------------------------------------ run view
  function renderRun() {
    const run = S.run;
    setTopbar();
    $("nav-run").hidden = false;
    $("run-goal").textContent = run.goalTitle || run.runId;
    const meta = [
      `run ${run.runId}`,
      run.runtime ? `runtime ${run.runtime}` : null,
      run.sandbox ? `sandbox: ${run.sandbox}` : null,
      run.agent ? `agent ${run.agent}` : null,
      `HITL ${run.hitl}`,
      run.sharedContext ? "shared context" : "fresh session per iteration",
      run.goalSource ? `goal ${run.goalSource}` : null,
    ].filter(Boolean);
    $("run-meta").textContent = meta.join(" · ");
    renderHeadline(run);
    renderClock();
    renderNow(run);
    renderBadges(run);
    renderFigures(run);
    renderControls(run);
    renderStages(run);
    renderChart();
    renderCards();
    maybeAskQuestions();
  }

  function renderHeadline(run) {
    const counts = stageCounts(run);
    const ratio = counts.total ? Math.round((counts.done / counts.total) * 100) : 0;
    $("stages-done").textContent = `${counts.done} / ${counts.total}`;
    $("run-progress").style.width = `${ratio}%`;
    $("run-progress-holder").setAttribute("aria-valuenow", String(ratio));
    $("agent-percent").textContent = `agent reports ${run.lastPercent || 0}%`;
  }

  function renderClock() {
    const run = S.run;
    if (!run) return;
    const now = Date.now();
    const clock = runClock(run, sortedIterations(), now);
    $("run-elapsed").textContent = fmtDuration(clock.elapsed);
    const of = `${run.iteration || 0} / ${run.maxIterations || "?"}`;
    $("run-iteration").textContent = clock.running && clock.runningFor !== null ? `${of} · running ${fmtDuration(clock.runningFor)}` : of;
    $("run-average").textContent = clock.average === null ? "—" : fmtDuration(clock.average);
    $("run-eta").textContent = etaText(run, clock);
    renderQuota(run, now);
    const runningCard = clock.running ? document.querySelector(`.iteration[data-iter="${clock.running.iteration}"] .iteration__duration`) : null;
    if (runningCard && clock.runningFor !== null) runningCard.textContent = `running ${fmtDuration(clock.runningFor)}`;
  }

  // The ETA box: a question pending stops the clock that matters, so it says who the run waits for.
  function etaText(run, clock) {
    if (clock.final) return "finished";
    if (run.status === "waiting-answer") return "waiting for you";
    if (run.status === "paused") return "paused";
    return clock.eta === null ? "after the first iteration" : `~${fmtDuration(clock.eta)}`;
  }

  // A usage-limit wait: status waiting-quota, and the ISO time the limit resets in `quotaUntil`.
  function renderQuota(run, now) {
    const box = $("quota-wait");
    const waiting = run.status === "waiting-quota";
    box.hidden = !waiting;
    if (!waiting) return;
    const reset = parseTime(run.quotaUntil);
    box.textContent = reset === null ? "waiting for the usage limit to reset" : `usage limit: resumes in ${fmtDuration(reset - now)}`;
  }

  function renderNow(run) {
    const stages = run.stages || [];
    const final = FINAL.has(run.status);
    const index = stages.findIndex((stage) => stage.id === run.currentStageId);
    if (final) {
      $("now-stage").textContent = `Finished: ${run.stopReason || statusText(displayStatus(run))}`;
    } else if (index >= 0) {
      $("now-stage").textContent = `Stage ${index + 1} of ${stages.length}: ${stages[index].title}`;
    } else {
      $("now-stage").textContent = run.status === "starting" ? "Starting…" : "Between stages";
    }
    const waiting = { "waiting-answer": "Waiting for your answer: press Answer question", paused: "Paused: press Resume to go on", "waiting-quota": "Waiting for the usage limit to reset" };
    $("now-doing").textContent = final ? "" : (waiting[run.status] || S.nowDoing || "");
    fill($("now-tools"), ...(final ? [] : S.nowTools.map((tool) => h("li", { text: tool }))));
    const unanswered = run.unanswered || []; // questions whose --answer-timeout elapsed
    const box = $("now-unanswered");
    box.hidden = !unanswered.length;
    box.textContent = unanswered.length ? `${unanswered.length} question(s) went unanswered (the run went on): ${unanswered.map((q) => q.question || q).join(" · ")}` : "";
    renderNotes(run, final);
  }

  // Notes to the agent: a box under "Now" while the run goes; each note's life (queued -> delivered -> acknowledged).
  const NOTE_STATUS = { queued: "queued", delivered: "delivered, waiting for the agent to confirm", acknowledged: "acknowledged", withdrawn: "withdrawn" };
  function renderNotes(run, final) {
    const notes = run.notes || [];
    $("note-form").hidden = final && !notes.length;
    $("note-text").disabled = $("note-send").disabled = final || !S.live;
    fill($("note-list"), ...notes.slice(-10).map((note) => {
      const via = note.deliveredVia === "live" ? " (live, into the session)" : note.deliveredVia === "prompt" ? " (in the prompt)" : "";
      const item = h("li", { class: `note note--${note.status}`, title: note.text },
        h("strong", { text: `${note.id} ` }), `${note.text.length > 120 ? note.text.slice(0, 119) + "…" : note.text} — ${NOTE_STATUS[note.status] || note.status}${via}`);
      if (note.status === "queued" && S.live && !final) {
        const withdraw = h("button", { type: "button", class: "link", text: "withdraw" });
        withdraw.addEventListener("click", () => attempt(() => api(`/api/notes/${encodeURIComponent(note.id)}/withdraw`, { body: {} }), `note ${note.id} withdrawn`));
        item.append(" ", withdraw);
      }
      return item;
    }));
  }

  async function sendNote(event) {
    event.preventDefault();
    const box = $("note-text");
    const text = box.value.trim();
    if (!text) { notify("write the note first", "error"); return; }
    const result = await attempt(() => api("/api/notes", { body: { text } }),
      (reply) => `note ${reply.id} queued: it goes with the agent's next model request${reply.masked ? " (a secret in it was masked)" : ""}`);
    if (result) box.value = "";
  }

  function renderBadges(run) {
    const badges = [];
    if (run.dryRun) badges.push(h("span", { class: "chip", text: "dry run" }));
    if (run.promptExtra) badges.push(h("span", { class: "chip chip--accent", title: run.promptExtra, text: "custom instruction" }));
    if (run.paused && !FINAL.has(run.status)) badges.push(h("span", { class: "chip chip--warn", text: "pause requested" }));
    if (run.abortRequested && !FINAL.has(run.status)) badges.push(h("span", { class: "chip chip--warn", text: "abort after this session" }));
    if (run.retry && run.retry.attempt) badges.push(h("span", { class: "chip chip--warn", text: `auto-retry ×${run.retry.attempt}` }));
    if (!S.live) badges.push(h("span", { class: "chip", text: "saved run" }));
    fill($("run-badges"), ...badges);
  }

  function renderFigures(run) {
    const totals = run.totals || {};
    const budget = S.budget || {};
    const figures = [
      ["Cost", budget.maxCost ? `${fmtCost(totals.cost)} / ${fmtCost(budget.maxCost)}` : fmtCost(totals.cost)],
      ["Tokens", budget.maxTokens ? `${fmtTokens(totals.tokens)} / ${fmtTokens(budget.maxTokens)}` : fmtTokens(totals.tokens)],
      ["Context", fmtTokens(run.contextTokens)],
      ["Answers", String(run.answers || 0)],
      ["Guard blocks", String(run.guardBlocks || 0)],
    ];
    $("run-figures").replaceChildren(...figures.map(([label, value]) => h("div", { class: "figure" }, h("dt", { text: label }), h("dd", { text: value }))));
  }

  function renderControls(run) {
    const active = S.live && !FINAL.has(run.status) && run.running !== false;
    const pause = $("ctl-pause");
    if (S.pausedWanted !== undefined && Boolean(run.paused) === S.pausedWanted) S.pausedWanted = undefined;
    const paused = S.pausedWanted !== undefined ? S.pausedWanted : Boolean(run.paused);
    pause.textContent = paused ? "Resume" : "Pause";
    pause.dataset.action = paused ? "resume" : "pause";
    for (const id of ["ctl-pause", "ctl-abort", "ctl-stop", "ctl-shared"]) {
      $(id).disabled = !active;
      const holder = id === "ctl-shared" ? $(id).closest("label") : $(id);
      holder.hidden = !active;
    }
    $("ctl-abort").textContent = run.abortRequested ? "Abort requested" : "Abort after session";
    // A click wins over state frames that left the server before it was applied.
    if (S.sharedWanted !== undefined && Boolean(run.sharedContext) === S.sharedWanted) S.sharedWanted = undefined;
    $("ctl-shared").checked = S.sharedWanted !== undefined ? S.sharedWanted : Boolean(run.sharedContext);
    $("ctl-report").href = runPath("/export");
    $("ctl-report").setAttribute("download", `kilo-loop-${run.runId}-report.md`);
    $("ctl-new-run").hidden = active;
    $("ctl-finished").hidden = active;
    $("ctl-finished").textContent = S.live ? `Run ended: ${statusText(displayStatus(run))}.` : `Saved run (${statusText(displayStatus(run))}).`;
    $("ctl-answer").hidden = !(S.live && (run.pendingQuestions || []).length);
  }

  // Done stages and the current one in the list; the stages after it folded away.
  function renderStages(run) {
    const stages = run.stages || [];
    const current = run.currentStageId;
    const final = FINAL.has(run.status);
    let cut = stages.findIndex((stage) => stage.id === current);
    if (cut < 0) cut = stages.findIndex((stage) => stage.status !== "done");
    const visible = final || cut < 0 ? stages.length : cut + 1;
    const row = (stage, index) => {
      const status = stage.id === current && stage.status === "pending" && !final ? "in_progress" : stage.status;
      return h("li", { class: `stage stage--${status}${stage.id === current && !final ? " stage--current" : ""}` },
        h("span", { class: "stage__number", text: `${index + 1}.` }),
        h("span", { class: `chip chip--${status}`, text: status.replace("_", " ") }),
        h("span", { class: "stage__title", text: stage.title }),
        stage.verify ? h("code", { class: "stage__verify", text: stage.verify }) : null);
    };
    fill($("run-stages"), ...stages.slice(0, visible).map((stage, index) => row(stage, index)));
    const later = stages.slice(visible);
    $("stages-later").hidden = !later.length;
    $("stages-later-summary").textContent = `${later.length} more stage${later.length === 1 ? "" : "s"} after this one`;
    fill($("run-stages-later"), ...later.map((stage, index) => row(stage, visible + index)));
  }

  function sortedIterations() {
    return [...S.iterations.values()].sort((a, b) => a.iteration - b.iteration);
  }

  // The chart's series: per finished iteration its own amount and the running total (pure).
  // Iterations before the loaded window count in the starting total; the running iteration is
  // not a zero: it is drawn apart, at what it has spent so far.
  function cumulativeSeries(items, key, total, windowStart) {
    const finished = items.filter((item) => item.outcome !== "running");
    const running = items.find((item) => item.outcome === "running") || null;
    const shown = items.reduce((sum, item) => sum + (Number(item[key]) || 0), 0);
    let sum = windowStart > 0 ? Math.max(0, (Number(total) || 0) - shown) : 0;
    const points = finished.map((item) => {
      sum += Number(item[key]) || 0;
      return { item, amount: Number(item[key]) || 0, cumulative: sum };
    });
    const live = running ? { item: running, amount: Number(running[key]) || 0, cumulative: sum + (Number(running[key]) || 0) } : null;
    return { points, running: live };
  }

  function niceMax(value) {
    if (value <= 0) return 1;
    const power = 10 ** Math.floor(Math.log10(value));
    const steps = [1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10];
    return steps.map((step) => step * power).find((candidate) => candidate >= value) || value;
  }

  function renderChart() {
    const chart = $("chart");
    const run = S.run;
    const items = sortedIterations();
    const mode = S.chartMode;
    const key = mode === "cost" ? "cost" : "tokens";
    const fmt = mode === "cost" ? fmtCost : fmtTokens;
    const budget = S.budget ? (mode === "cost" ? S.budget.maxCost : S.budget.maxTokens) : null;
    $("chart-title").textContent = mode === "cost" ? "Cumulative cost" : "Cumulative tokens";
    if (!items.length) {
      chart.replaceChildren(h("p", { class: "muted", text: "No iterations yet." }));
      return;
    }
    const totals = (run && run.totals) || {};
    const series = cumulativeSeries(items, key, totals[key], S.offset);
    const slots = series.points.length + (series.running ? 1 : 0);
    const top = Math.max(...series.points.map((p) => p.cumulative), series.running ? series.running.cumulative : 0, budget || 0);
    const W = Math.max(280, Math.round(chart.clientWidth || 640));
    const H = W < 500 ? 200 : 230;
    const widest = Math.max(...[0, top, budget || 0].map((value) => fmt(niceMax(value * 1.05)).length));
    const pad = { l: 12 + widest * 7.5, r: 12, t: 14, b: 28 }; // room for the y labels at 12px
    const innerW = W - pad.l - pad.r;
    const innerH = H - pad.t - pad.b;
    const yMax = niceMax(top * 1.05);
    const y = (value) => pad.t + innerH - (value / yMax) * innerH;
    const step = innerW / Math.max(1, slots);
    const x = (index) => pad.l + index * step + step / 2;
    const parts = [];
    for (const tick of [0, yMax / 2, yMax]) {
      parts.push(s("line", { class: "chart__grid", x1: pad.l, x2: pad.l + innerW, y1: y(tick).toFixed(1), y2: y(tick).toFixed(1) }));
      parts.push(s("text", { class: "chart__label", x: pad.l - 6, y: (y(tick) + 4).toFixed(1), "text-anchor": "end", text: fmt(tick) }));
    }
    const barW = Math.max(2, Math.min(step * 0.6, 36));
    series.points.forEach((point, index) => {
      const height = (point.amount / yMax) * innerH;
      parts.push(s("rect", { class: `chart__bar chart__bar--${point.item.outcome}`, x: (x(index) - barW / 2).toFixed(1), y: (pad.t + innerH - height).toFixed(1), width: barW.toFixed(1), height: Math.max(0, height).toFixed(1) }));
    });
    if (budget) {
      parts.push(s("line", { class: "chart__budget", x1: pad.l, x2: pad.l + innerW, y1: y(budget).toFixed(1), y2: y(budget).toFixed(1) }));
      parts.push(s("text", { class: "chart__label chart__label--budget", x: pad.l + innerW - 4, y: (y(budget) - 5).toFixed(1), "text-anchor": "end", text: `budget ${fmt(budget)}` }));
    }
    const line = series.points.map((point, index) => `${x(index).toFixed(1)},${y(point.cumulative).toFixed(1)}`);
    if (line.length) parts.push(s("polyline", { class: "chart__line", points: line.join(" ") }));
    series.points.forEach((point, index) => parts.push(s("circle", { class: "chart__dot", cx: x(index).toFixed(1), cy: y(point.cumulative).toFixed(1), r: 3.5 })));
    if (series.running) {
      const index = series.points.length;
      const last = series.points.length ? series.points[series.points.length - 1] : null;
      if (last) parts.push(s("line", { class: "chart__line chart__line--running", x1: x(index - 1).toFixed(1), y1: y(last.cumulative).toFixed(1), x2: x(index).toFixed(1), y2: y(series.running.cumulative).toFixed(1) }));
      parts.push(s("circle", { class: "chart__dot chart__dot--running", cx: x(index).toFixed(1), cy: y(series.running.cumulative).toFixed(1), r: 4 }));
    }
    const all = [...series.points, ...(series.running ? [series.running] : [])];
    const every = Math.max(1, Math.ceil(all.length / Math.max(1, Math.floor(innerW / 46))));
    all.forEach((point, index) => {
      if (index % every === 0 || index === all.length - 1) {
        parts.push(s("text", { class: "chart__label", x: x(index).toFixed(1), y: H - 8, "text-anchor": "middle", text: `#${point.item.iteration}` }));
      }
    });
    all.forEach((point, index) => {
      parts.push(s("rect", { class: "chart__hit", x: (pad.l + index * step).toFixed(1), y: pad.t, width: step.toFixed(1), height: innerH, "data-index": index },
        s("title", { text: chartTip(point, fmt, budget).join("\n") })));
    });
    const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, width: W, height: H, class: "chart__svg", role: "img", "aria-label": `${mode === "cost" ? "cumulative cost" : "cumulative tokens"} per iteration${budget ? " against the budget" : ""}` }, ...parts);
    svg.addEventListener("pointermove", (event) => showChartTip(event, all, fmt, budget));
    svg.addEventListener("pointerleave", () => { $("chart-tip").hidden = true; });
    const legend = h("div", { class: "chart__legend" },
      h("span", { class: "legend legend--line", text: mode === "cost" ? "cost so far" : "tokens so far" }),
      h("span", { class: "legend legend--bars", text: "per iteration" }),
      budget ? h("span", { class: "legend legend--budget", text: `budget (${mode === "cost" ? "--max-cost" : "--max-tokens"})` })
        : h("span", { class: "muted", text: mode === "cost" ? "no --max-cost set" : "no --max-tokens set" }));
    chart.replaceChildren(svg, legend);
  }

  function chartTip(point, fmt, budget) {
    const item = point.item;
    const lines = [
      `#${item.iteration} · ${item.stageTitle || item.stageId || "goal"}`,
      `${item.outcome === "running" ? "so far" : "this iteration"}: ${fmt(point.amount)}`,
      `total: ${fmt(point.cumulative)}${budget ? ` of ${fmt(budget)} (${Math.round((point.cumulative / budget) * 100)}%)` : ""}`,
      item.outcome === "running" ? "running" : `${item.outcome} · ${fmtDuration(item.durationMs)}`,
    ];
    return lines;
  }

  function showChartTip(event, all, fmt, budget) {
    const target = event.target.closest ? event.target.closest(".chart__hit") : null;
    const tip = $("chart-tip");
    if (!target) {
      tip.hidden = true;
      return;
    }
    const point = all[Number(target.dataset.index)];
    if (!point) return;
    fill(tip, ...chartTip(point, fmt, budget).map((line, index) => h(index ? "div" : "strong", { text: line })));
    tip.hidden = false;
    const card = tip.parentElement.getBoundingClientRect();
    const left = Math.min(Math.max(8, event.clientX - card.left + 12), card.width - tip.offsetWidth - 8);
    tip.style.left = `${left}px`;
    tip.style.top = `${Math.max(8, event.clientY - card.top - tip.offsetHeight - 10)}px`;
  }

  function setChartMode(mode) {
    S.chartMode = mode;
    for (const [id, value] of [["chart-cost", "cost"], ["chart-tokens", "tokens"]]) {
      $(id).classList.toggle("segmented__btn--on", value === mode);
      $(id).setAttribute("aria-pressed", String(value === mode));
    }
    renderChart();
  }

  // ------------------------------------------------------------------ receipts
  async function loadReceipts() {
    if (!S.run) return;
    const runId = S.run.runId;
    const data = await api(runPath("/receipts")).catch(() => null);
    if (!data || !S.run || S.run.runId !== runId) return;
    S.budget = data.budget || null;
    $("receipts-body").replaceChildren(...(data.stages || []).map((r) => h("tr", { class: `receipt receipt--${r.status}` },
      h("td", { class: "receipt__title", text: r.title }),
      h("td", {}, h("span", { class: `chip chip--${r.status}`, text: r.status.replace("_", " ") })),
      h("td", { text: String(r.iterations) }),
      h("td", { text: r.iterations ? fmtDuration(r.durationMs) : "—" }),
      h("td", { text: fmtTokens(r.tokens) }),
      h("td", { text: fmtCost(r.cost) }),
      h("td", { text: String(r.retries) }),
      h("td", { class: `receipt__verify receipt__verify--${r.verify.split(" ")[0]}`, title: r.verifyCommand || "", text: r.verify }),
      h("td", { text: r.review }))));
    renderFigures(S.run);
    renderChart();
  }

  function queueReceipts() {
    clearTimeout(S.receiptsTimer);
    S.receiptsTimer = setTimeout(loadReceipts, 400);
  }

  function renderCards() {
    const container = $("iteration-cards");
    const items = sortedIterations().reverse();
    $("iterations-count").textContent = S.total ? `(${S.iterations.size} of ${S.total} shown)` : "";
    $("load-earlier").hidden = !(S.offset > 0);
    const wanted = new Set(items.map((item) => String(item.iteration)));
    for (const card of [...container.children]) {
      if (!wanted.has(card.dataset.iter)) {
        card.remove();
        S.cardCache.delete(card.dataset.iter);
      }
    }
    let previous = null;
    for (const item of items) {
      const key = String(item.iteration);
      const json = JSON.stringify(item);
      let card = container.querySelector(`[data-iter="${key}"]`);
      if (!card || S.cardCache.get(key) !== json) {
        const fresh = iterationCard(item);
        if (card) card.replaceWith(fresh);
        card = fresh;
        S.cardCache.set(key, json);
      }
      const expected = previous ? previous.nextElementSibling : container.firstElementChild;
      if (expected !== card) container.insertBefore(card, expected);
      previous = card;
    }
  }

  function iterationCard(item) {
    const files = item.filesChanged || [];
    const filesTotal = item.filesChangedTotal || files.length;
    const verify = item.verify;
    const facts = [
      ["tokens", fmtTokens(item.tokens)],
      ["cost", fmtCost(item.cost)],
      ["context", fmtTokens(item.contextTokens)],
      ["%", `${item.percent || 0}%`],
      ["next", item.nextStage || "—"],
      ["retries", item.retries ? `${item.retries} (${item.retryReason})` : "0"],
      ["guard hits", item.guardHits ? `${item.guardHits} (${item.guardReason})` : "0"],
      ["verify", verify ? (verify.passed ? `passed: ${verify.command}` : `failed (exit ${verify.exitCode}${verify.timedOut ? ", timed out" : ""}): ${verify.command}`) : "—"],
    ];
    const card = h("article", { class: `iteration iteration--${item.outcome}`, "data-iter": String(item.iteration) },
      h("header", { class: "iteration__head" },
        h("strong", { text: `#${item.iteration}` }),
        h("span", { class: "iteration__stage", text: item.stageTitle || item.stageId || "goal" }),
        h("span", { class: "iteration__duration", title: "duration", text: item.outcome === "running" ? "running" : fmtDuration(item.durationMs) }),
        h("span", { class: `chip chip--${item.outcome}`, text: item.outcome === "retrying" ? `retrying (auto-retry ×${item.retries})` : item.outcome })),
      item.topic ? h("p", { class: "iteration__topic", text: item.topic }) : null,
      h("dl", { class: "facts" }, ...facts.map(([label, value]) => h("div", { class: `fact fact--${label.replace(" ", "-")}` }, h("dt", { text: label }), h("dd", { text: value })))),
      item.summary ? h("p", { class: "iteration__summary", text: item.summary }) : null,
      filesTotal ? h("details", { class: "iteration__files" },
        h("summary", { text: `${filesTotal} file(s) changed` }),
        h("ul", {}, ...files.map((file) => h("li", { text: file })), filesTotal > files.length ? h("li", { class: "muted", text: `… ${filesTotal - files.length} more` }) : null)) : null,
      verify && !verify.passed && verify.outputTail ? h("pre", { class: "pre pre--small", text: verify.outputTail }) : null,
      item.error ? h("p", { class: "error-text", text: item.error }) : null,
      (item.warnings || []).length ? h("ul", { class: "warnings" }, ...item.warnings.map((w) => h("li", { text: w }))) : null,
      h("footer", { class: "actions" },
        h("button", { type: "button", text: "Report", onclick: () => showIterationReport(item.iteration) }),
        h("button", { type: "button", text: "Diff", onclick: () => showDiff(item.iteration) }),
        h("button", { type: "button", class: "danger", text: `Revert before #${item.iteration}`, "data-revert": item.iteration, onclick: () => revert(item.iteration) })));
    return card;
  }

  async function loadEarlier() {
    if (!S.run || S.offset <= 0) return;
    const limit = Math.min(PAGE, S.offset);
    const offset = S.offset - limit;
    const page = await attempt(() => api(runPath(`?offset=${offset}&limit=${limit}`)));
    if (!page) return;
    for (const item of page.iterations || []) S.iterations.set(item.iteration, item);
    S.offset = page.iterationsOffset;
    renderChart();
    renderCards();
  }

  // ------------------------------------------------------------------ controls
  async function control(action, value) {
    const body = value === undefined ? { action } : { action, value };
    return attempt(() => api("/api/control", { body }));
  }

  async function togglePause() {
    const action = $("ctl-pause").dataset.action || "pause";
    const result = await control(action);
    if (result) {
      notify(action === "pause" ? "Pausing before the next iteration" : "Resumed");
      S.pausedWanted = result.paused;
      renderControls(S.run);
    }
  }

  async function abortAfterSession() {
    if (await control("abort-after-current")) notify("The run stops after the current session");
  }

  async function stopNow() {
    const ok = await confirmDialog("Stop now?", "Kills the current agent session and ends the run. It can be resumed later with --resume.", "Stop now");
    if (ok && (await control("stop"))) notify("Stopping the run");
  }

  async function toggleShared(event) {
    const value = event.target.checked;
    S.sharedWanted = value;
    const result = await control("set-shared-context", value);
    if (result) {
      notify(value ? "Shared context from the next iteration" : "Fresh session + handoff from the next iteration");
    } else {
      S.sharedWanted = undefined;
      event.target.checked = !value;
    }
  }

  async function revert(iteration) {
    const ok = await confirmDialog(`Revert before #${iteration}?`,
      `Restores the project to the checkpoint taken before iteration ${iteration}: tracked files go back and files created since are deleted. This cannot be undone.`,
      `Revert before #${iteration}`);
    if (!ok) return;
    const body = { iteration };
    if (!S.live) body.run = S.run.runId;
    await attempt(() => api("/api/revert", { body }),
      (r) => `Reverted to before #${r.iteration}: ${r.restored.length} restored, ${r.deleted.length} deleted`);
  }

  async function showText(title, path) {
    const text = await attempt(() => api(path));
    if (text === undefined) return;
    $("text-title").textContent = title;
    $("text-body").textContent = typeof text === "string" ? (text || "(empty)") : JSON.stringify(text, null, 2);
    $("text-modal").showModal();
  }

  function showIterationReport(iteration) {
    return showText(`Iteration ${iteration} report`, runPath(`/report/${iteration}`));
  }

  function showDiff(iteration) {
    return showText(`Checkpoint before iteration ${iteration} (git diff HEAD)`, runPath(`/diff/${iteration}`));
  }

  async function loadCheckpoints() {
    if (!S.run) return;
    const data = await api(runPath("/checkpoints")).catch(() => null);
    const box = $("checkpoints");
    if (!data || !data.checkpoints.length) {
      box.replaceChildren(h("p", { class: "muted", text: "No checkpoints yet." }));
      return;
    }
    box.replaceChildren(...data.checkpoints.slice().reverse().map((cp) => h("div", { class: "checkpoint" },
      h("span", { text: `before #${cp.iteration}` }),
      h("span", { class: "muted", text: `HEAD ${cp.head ? cp.head.slice(0, 10) : "none"} · patch ${fmtBytes(cp.patchBytes)} · ${cp.untracked} untracked` }),
      h("button", { type: "button", text: "Diff", onclick: () => showDiff(cp.iteration) }),
      h("button", { type: "button", class: "danger", text: "Revert", onclick: () => revert(cp.iteration) }))));
  }

  // ------------------------------------------------------------------ questions
  function maybeAskQuestions() {
    const questions = (S.live && S.run && S.run.pendingQuestions) || [];
    const key = JSON.stringify(questions);
    const modal = $("question-modal");
    if (!questions.length) {
      if (modal.open) modal.close("answered");
      S.dismissedQuestions = "";
      return;
    }
    // While the review gate's own panel is open it is the answer to the pending gate question
    // (review.js): the generic dialog would cover it, whichever of the two the state showed first.
    const gate = $("review-gate-modal");
    if (gate && gate.open) {
      if (modal.open) modal.close("gate");
      return;
    }
    if (modal.open || S.dismissedQuestions === key) return;
    openQuestions(questions);
  }

  function openQuestions(questions) {
    const modal = $("question-modal");
    modal.dataset.key = JSON.stringify(questions);
    $("questions").replaceChildren(...questions.map((question, index) => {
      const answer = h("textarea", { class: "answer", rows: 2, maxlength: 8000, "data-question": question.question, placeholder: "Type an answer, or pick an option to edit it", "aria-label": `answer ${index + 1}` });
      const options = (question.options || []).map((option) => h("button", {
        type: "button",
        class: "option",
        text: option,
        onclick: (event) => {
          answer.value = option;
          for (const b of event.target.parentElement.children) b.classList.toggle("option--picked", b === event.target);
          answer.focus();
        },
      }));
      return h("fieldset", { class: "question" },
        h("legend", { text: question.question }),
        options.length ? h("div", { class: "options" }, ...options) : null,
        answer);
    }));
    modal.showModal();
  }

  async function submitAnswers(event) {
    event.preventDefault();
    const answers = [...document.querySelectorAll("#questions textarea.answer")]
      .map((area) => ({ question: area.dataset.question, answer: area.value.trim() }))
      .filter((item) => item.answer);
    if (!answers.length) {
      notify("Type an answer or pick an option first", "error");
      return;
    }
    const result = await attempt(() => api("/api/answer", { body: { answers } }), "Answer sent: it goes into the next session");
    if (result) $("question-modal").close("answered");
  }

  function answerLater() {
    const modal = $("question-modal");
    S.dismissedQuestions = modal.dataset.key || "";
    modal.close("later");
  }

  // ------------------------------------------------------------------ confirm
  function confirmDialog(title, text, confirmLabel) {
    const modal = $("confirm-modal");
    $("confirm-title").textContent = title;
    $("confirm-text").textContent = text;
    $("confirm-yes").textContent = confirmLabel || "Confirm";
    modal.returnValue = "";
    return new Promise((resolve) => {
      modal.addEventListener("close", () => resolve(modal.returnValue === "yes"), { once: true });
      modal.showModal();
    });
  }

  // ------------------------------------------------------------------ saved runs
  async function openRuns() {
    show("runs");
    const data = await attempt(() => api("/api/runs"));
    if (!data) return;
    const rows = data.runs.map((run) => h("tr", { class: "runs-table__row", tabindex: 0, "data-run": run.runId,
      onclick: () => openSavedRun(run.runId, data.activeRunId),
      onkeydown: (event) => { if (event.key === "Enter") openSavedRun(run.runId, data.activeRunId); } },
    h("td", {}, h("code", { text: run.runId })),
    h("td", { text: run.goalTitle || "—" }),
    h("td", {}, h("span", { class: `chip chip--${displayStatus(run)}`, text: statusText(displayStatus(run)) })),
    h("td", { text: run.stagesTotal ? `${run.stagesDone} / ${run.stagesTotal}` : "—" }),
    h("td", { text: `${run.iterationsTotal || run.iteration || 0}` }),
    h("td", { text: run.durationMs === null || run.durationMs === undefined ? "—" : fmtDuration(run.durationMs) }),
    h("td", { text: fmtCost(run.cost) }),
    h("td", { text: fmtDate(run.startedAt) })));
    $("runs-body").replaceChildren(...rows);
    $("runs-empty").hidden = rows.length > 0;
  }

  async function openSavedRun(runId, activeRunId) {
    if (runId === activeRunId) {
      await loadState();
      return;
    }
    const data = await attempt(() => api(`/api/runs/${encodeURIComponent(runId)}`));
    if (!data) return;
    stopStream();
    adoptSnapshot(data, false);
    show("run");
  }

  // ------------------------------------------------------------------ wiring
  function wire() {
    $("nav-launcher").addEventListener("click", openLauncher);
    $("nav-runs").addEventListener("click", openRuns);
    $("nav-run").addEventListener("click", () => (S.live ? show("run") : loadState()));
    $("plan-select").addEventListener("change", renderPlan);
    $("plan-mark-done").addEventListener("click", () => markPlan(true));
    $("plan-clear-done").addEventListener("click", () => markPlan(false));
    $("plan-delete").addEventListener("click", deletePlan);
    $("start-form").addEventListener("submit", (event) => startRun(event));
    $("global-verify-form").addEventListener("submit", saveGlobalVerify);
    $("ctl-pause").addEventListener("click", togglePause);
    $("ctl-abort").addEventListener("click", abortAfterSession);
    $("ctl-stop").addEventListener("click", stopNow);
    $("ctl-shared").addEventListener("change", toggleShared);
    $("ctl-answer").addEventListener("click", () => { if (S.run) openQuestions(S.run.pendingQuestions || []); });
    $("ctl-new-run").addEventListener("click", openLauncher);
    $("load-earlier").addEventListener("click", loadEarlier);
    $("question-form").addEventListener("submit", submitAnswers);
    $("note-form").addEventListener("submit", sendNote);
    $("question-later").addEventListener("click", answerLater);
    $("question-modal").addEventListener("cancel", () => { S.dismissedQuestions = $("question-modal").dataset.key || ""; });
    $("chart-cost").addEventListener("click", () => setChartMode("cost"));
    $("chart-tokens").addEventListener("click", () => setChartMode("tokens"));
    $("log-filter").addEventListener("click", (event) => {
      const button = event.target.closest("button[data-filter]");
      if (button) setLogFilter(button.dataset.filter);
    });
    $("log-search").addEventListener("input", (event) => {
      S.logSearch = event.target.value.trim().toLowerCase();
      applyLogFilter();
    });
    // The chart is drawn at its box's own width (labels stay 12px): redraw when the box changes,
    // also when the run view first becomes visible.
    let chartWidth = 0;
    new ResizeObserver(() => {
      const width = $("chart").clientWidth;
      if (S.run && width && Math.abs(width - chartWidth) > 1) {
        chartWidth = width;
        renderChart();
      }
    }).observe($("chart"));
    new ResizeObserver(() => {
      document.documentElement.style.setProperty("--topbar-h", `${$("topbar").offsetHeight}px`);
    }).observe($("topbar"));
    setInterval(() => { if (S.run && !$("view-run").hidden) renderClock(); }, 1000);
  }

  function dropTokenFromAddressBar() {
    const url = new URL(window.location.href);
    if (url.searchParams.has("token")) {
      url.searchParams.delete("token");
      window.history.replaceState(null, "", url.pathname + (url.search || "") + url.hash);
    }
  }

  window.kiloLoop = { topbarState, runClock, cumulativeSeries, displayStatus, fmtDuration, etaText }; // for tests and the curious
  document.addEventListener("DOMContentLoaded", () => {
    dropTokenFromAddressBar();
    wire();
    loadState();
  });
})();
