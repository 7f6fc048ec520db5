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
    const status = S.run ? S.run.status : "idle";
    const state = topbarState(status, S.stale && S.live);
    $("topbar").className = `topbar topbar--${state}`;
    const pill = $("status-pill");
    pill.textContent = state === "stale" ? `${status} (connection lost)` : status;
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
    for (const event of snapshot.logTail || []) appendLog(event);
    S.dismissedQuestions = "";
    renderRun();
    loadCheckpoints();
  }

  function mergeHead(head) {
    if (!S.run || head.runId !== S.run.runId) return;
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
  }

  // ------------------------------------------------------------------ log
  function appendLog(event) {
    const log = $("log");
    let line;
    if (event.type === "iteration-started" || event.type === "run-started") {
      line = h("div", { class: "log__section", text: event.message });
    } else if (event.type === "tool") {
      const failed = event.data && event.data.status === "error";
      line = h("div", { class: `log__tool${failed ? " log__tool--error" : ""}`, text: event.message });
    } else {
      line = h("div", { class: `log__line log__line--${event.level || "info"} log__type--${event.type}` },
        h("time", { text: fmtTime(event.ts) }), " ", event.message);
    }
    line.dataset.seq = event.seq;
    log.append(line);
    while (log.childElementCount > LOG_MAX_LINES) log.firstElementChild.remove();
    if ($("log-follow").checked) log.scrollTop = log.scrollHeight;
  }

  // ------------------------------------------------------------------ run view
  function renderRun() {
    const run = S.run;
    setTopbar();
    $("nav-run").hidden = false;
    $("run-goal").textContent = run.goalTitle || run.runId;
    const meta = [
      `run ${run.runId}`,
      `iteration ${run.iteration || 0}/${run.maxIterations || "?"}`,
      run.runtime ? `runtime ${run.runtime}` : null,
      run.agent ? `agent ${run.agent}` : null,
      `HITL ${run.hitl}`,
      run.sharedContext ? "shared context" : "fresh session per iteration",
      run.goalSource ? `goal ${run.goalSource}` : null,
    ].filter(Boolean);
    $("run-meta").textContent = meta.join(" · ");
    $("run-progress").style.width = `${Math.max(0, Math.min(100, run.lastPercent || 0))}%`;
    renderBadges(run);
    renderFigures(run);
    renderControls(run);
    renderStages(run);
    renderChart();
    renderCards();
    maybeAskQuestions();
  }

  function renderBadges(run) {
    const badges = [];
    if (run.dryRun) badges.push(h("span", { class: "chip", text: "dry run" }));
    if (run.promptExtra) badges.push(h("span", { class: "chip chip--accent", title: run.promptExtra, text: "custom instruction" }));
    if (run.paused && !FINAL.has(run.status)) badges.push(h("span", { class: "chip chip--warn", text: "pause requested" }));
    if (run.abortRequested && !FINAL.has(run.status)) badges.push(h("span", { class: "chip chip--warn", text: "abort after this session" }));
    if (run.retry && run.retry.attempt) badges.push(h("span", { class: "chip chip--warn", text: `auto-retry ×${run.retry.attempt}` }));
    if (!S.live) badges.push(h("span", { class: "chip", text: "saved run" }));
    if (run.stopReason && FINAL.has(run.status)) badges.push(h("span", { class: "chip", text: run.stopReason }));
    fill($("run-badges"), ...badges);
  }

  function renderFigures(run) {
    const totals = run.totals || {};
    const figures = [
      ["Tokens", fmtTokens(totals.tokens)],
      ["Cost", fmtCost(totals.cost)],
      ["Context", fmtTokens(run.contextTokens)],
      ["Progress", `${run.lastPercent || 0}%`],
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
    $("ctl-finished").textContent = S.live ? `Run ${run.status}.` : `Saved run (${run.status}).`;
    $("ctl-answer").hidden = !(S.live && (run.pendingQuestions || []).length);
  }

  function renderStages(run) {
    const current = run.currentStageId;
    $("run-stages").replaceChildren(...(run.stages || []).map((stage) => {
      const status = stage.id === current && stage.status === "pending" ? "in_progress" : stage.status;
      return h("li", { class: `stage stage--${status}${stage.id === current ? " stage--current" : ""}` },
        h("span", { class: `chip chip--${status}`, text: status.replace("_", " ") }),
        h("span", { class: "stage__title", text: stage.title }),
        stage.verify ? h("code", { class: "stage__verify", text: stage.verify }) : null);
    }));
  }

  function sortedIterations() {
    return [...S.iterations.values()].sort((a, b) => a.iteration - b.iteration);
  }

  function renderChart() {
    const items = sortedIterations();
    const chart = $("chart");
    if (!items.length) {
      chart.replaceChildren(h("p", { class: "muted", text: "No iterations yet." }));
      return;
    }
    const W = 640;
    const H = 200;
    const pad = { l: 48, r: 56, t: 12, b: 24 };
    const innerW = W - pad.l - pad.r;
    const innerH = H - pad.t - pad.b;
    const maxTokens = Math.max(1, ...items.map((i) => i.tokens || 0));
    const maxCost = Math.max(1e-6, ...items.map((i) => i.cost || 0));
    const step = innerW / items.length;
    const barW = Math.max(1, Math.min(step * 0.7, 40));
    const parts = [];
    parts.push(s("line", { class: "chart__axis", x1: pad.l, y1: pad.t + innerH, x2: pad.l + innerW, y2: pad.t + innerH }));
    parts.push(s("text", { class: "chart__label", x: pad.l - 6, y: pad.t + 10, "text-anchor": "end", text: fmtTokens(maxTokens) }));
    parts.push(s("text", { class: "chart__label", x: pad.l - 6, y: pad.t + innerH, "text-anchor": "end", text: "0" }));
    parts.push(s("text", { class: "chart__label chart__label--cost", x: pad.l + innerW + 6, y: pad.t + 10, text: fmtCost(maxCost) }));
    const points = [];
    items.forEach((item, index) => {
      const x = pad.l + index * step + (step - barW) / 2;
      const height = ((item.tokens || 0) / maxTokens) * innerH;
      parts.push(s("rect", { class: `chart__bar chart__bar--${item.outcome}`, x: x.toFixed(1), y: (pad.t + innerH - height).toFixed(1), width: barW.toFixed(1), height: height.toFixed(1) },
        s("title", { text: `#${item.iteration}: ${fmtTokens(item.tokens)} tokens, ${fmtCost(item.cost)}` })));
      const cx = pad.l + index * step + step / 2;
      const cy = pad.t + innerH - ((item.cost || 0) / maxCost) * innerH;
      points.push(`${cx.toFixed(1)},${cy.toFixed(1)}`);
    });
    parts.push(s("polyline", { class: "chart__line", points: points.join(" ") }));
    if (items.length <= 60) {
      for (const point of points) {
        const [cx, cy] = point.split(",");
        parts.push(s("circle", { class: "chart__dot", cx, cy, r: 2.5 }));
      }
    }
    const every = Math.max(1, Math.ceil(items.length / 12));
    items.forEach((item, index) => {
      if (index % every === 0 || index === items.length - 1) {
        parts.push(s("text", { class: "chart__label", x: (pad.l + index * step + step / 2).toFixed(1), y: H - 6, "text-anchor": "middle", text: `#${item.iteration}` }));
      }
    });
    const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, class: "chart__svg", role: "img", "aria-label": "tokens (bars) and cost (line) per iteration" }, ...parts);
    const legend = h("div", { class: "chart__legend" },
      h("span", { class: "legend legend--tokens", text: "tokens" }), h("span", { class: "legend legend--cost", text: "cost" }));
    chart.replaceChildren(svg, legend);
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
    h("td", {}, h("span", { class: `chip chip--${run.status}`, text: run.status })),
    h("td", { text: `${run.iterationsTotal}` }),
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
    $("question-later").addEventListener("click", answerLater);
    $("question-modal").addEventListener("cancel", () => { S.dismissedQuestions = $("question-modal").dataset.key || ""; });
  }

  function dropTokenFromAddressBar() {
    const url = new URL(window.location.href);
    if (url.searchParams.has("token")) {
      url.searchParams.delete("token");
      window.history.replaceState(null, "", url.pathname + (url.search || "") + url.hash);
    }
  }

  window.kiloLoop = { topbarState }; // for tests and the curious
  document.addEventListener("DOMContentLoaded", () => {
    dropTokenFromAddressBar();
    wire();
    loadState();
  });
})();
