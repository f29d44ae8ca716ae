// hgeval's web UI: draws the page its path names from the JSON routes under /ui/api/
// (server/http/web/web_ui.h). No framework; every text goes in through textContent.
"use strict";

const main = document.getElementById("main");
const params = new URLSearchParams(location.search);

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function svg(tag, attrs, ...children) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, String(value));
  for (const child of children.flat()) {
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

async function api(path, options) {
  const response = await fetch(path, Object.assign({ credentials: "same-origin" }, options));
  const text = await response.text();
  let body;
  try { body = JSON.parse(text); } catch (e) { body = { error: { message: text } }; }
  if (response.status === 401) {
    location.href = "/ui/login?next=" + encodeURIComponent(location.pathname + location.search);
    throw new Error("not logged in");
  }
  if (!response.ok) throw new Error((body.error && body.error.message) || response.statusText);
  return body;
}

// The page is drawn: the browser test waits for this and reads when it happened.
function markReady() {
  document.body.dataset.readyMs = performance.now().toFixed(1);
  document.body.dataset.ready = "1";
}

function show(...nodes) {
  main.replaceChildren(...nodes.filter((n) => n !== null && n !== undefined));
  markReady();
}

function fail(error) {
  show(el("p", { class: "error", id: "error" }, String(error.message || error)));
}

function duration(seconds) {
  if (seconds === null || seconds === undefined) return "—";
  seconds = Math.round(seconds);
  if (seconds < 60) return seconds + " s";
  if (seconds < 3600) return Math.floor(seconds / 60) + " min " + (seconds % 60) + " s";
  return Math.floor(seconds / 3600) + " h " + Math.floor((seconds % 3600) / 60) + " min";
}

function fixed(value, digits) {
  return value === null || value === undefined ? "N/A" : Number(value).toFixed(digits);
}

function resultsLink(job) {
  return (job.kind === "niah" ? "/ui/niah?id=" : "/ui/results?id=") + encodeURIComponent(job.id);
}

// ---- Jobs: the list, refreshed every second while the page is open.
async function jobsPage() {
  let polls = 0;
  const selected = new Set();
  const status = el("span", { class: "muted", id: "updated" });
  const compare = el("button", {
    id: "compare", onclick: () => {
      if (selected.size) location.href = "/ui/compare?ids=" + [...selected].map(encodeURIComponent).join(",");
    }
  }, "Compare selected");
  const body = el("tbody");
  const table = el("table", { id: "jobs" },
    el("thead", {}, el("tr", {}, ["", "Job", "State", "Model", "Tasks", "Progress", "ETA", "Created", ""]
      .map((h) => el("th", {}, h)))), body);
  main.replaceChildren(el("h1", {}, "Jobs"), el("div", { class: "toolbar" }, compare, status), table);

  async function refresh() {
    try {
      const data = await api("/ui/api/jobs?limit=100");
      body.replaceChildren(...data.jobs.map((job) => {
        const done = job.requests_done, total = job.requests_total;
        const share = total > 0 ? Math.min(1, done / total) : (job.state === "succeeded" ? 1 : 0);
        const live = job.state === "queued" || job.state === "running";
        return el("tr", { class: "job", "data-id": job.id, "data-state": job.state },
          el("td", {}, el("input", {
            type: "checkbox", checked: selected.has(job.id),
            onchange: (e) => e.target.checked ? selected.add(job.id) : selected.delete(job.id)
          })),
          el("td", {}, el("a", { href: resultsLink(job) }, job.id)),
          el("td", { class: "state state-" + job.state, title: job.error || null }, job.state),
          el("td", {}, job.model),
          el("td", {}, job.kind === "niah" ? "NIAH sweep" : job.tasks.join(", ")),
          el("td", { class: "progress" }, el("span", { class: "bar" }, el("span", { style: "width:" + (100 * share).toFixed(1) + "%" })),
            " " + done + " / " + total + (job.current_task ? " (" + job.current_task + ")" : "")),
          el("td", { class: "eta" }, live ? duration(job.eta_seconds) : "—"),
          el("td", { class: "muted" }, new Date(job.created_at * 1000).toLocaleString()),
          el("td", {}, live ? el("button", {
            class: "cancel", onclick: async () => {
              try { await api("/ui/api/cancel?id=" + encodeURIComponent(job.id), { method: "POST", headers: { "X-Hgeval-UI": "1" } }); refresh(); }
              catch (e) { alert(e.message); }
            }
          }, "Cancel") : el("a", { href: resultsLink(job) }, "results")));
      }));
      polls += 1;
      document.body.dataset.polls = String(polls);
      status.textContent = data.jobs.length + " jobs" + (data.omitted ? " (" + data.omitted + " older left out)" : "") +
        " · updated " + new Date().toLocaleTimeString();
    } catch (e) {
      status.textContent = "update failed: " + e.message;
    }
  }
  await refresh();
  markReady();
  setInterval(refresh, 1000);
}

// ---- Results: lm-eval's table, downloads, links to the samples.
function resultsTable(rows, first, id, hasSamples) {
  const headers = [first, "Version", "Filter", "n-shot", "Metric", "", "Value", "", "Stderr"];
  return el("table", { class: "results", id: first === "Tasks" ? "results-table" : "groups-table" },
    el("thead", {}, el("tr", {}, headers.map((h, i) => el("th", { class: i >= 6 ? "num" : null }, h)))),
    el("tbody", {}, rows.map((row) => el("tr", { "data-task": row.task, "data-metric": row.metric, "data-filter": row.filter },
      el("td", {}, row.name && hasSamples && first === "Tasks"
        ? el("a", { href: "/ui/samples?id=" + encodeURIComponent(id) + "&task=" + encodeURIComponent(row.task) }, row.name)
        : row.name),
      el("td", {}, row.version), el("td", {}, row.filter), el("td", { class: "num" }, row.n_shot),
      el("td", {}, row.metric), el("td", {}, row.arrow),
      el("td", { class: "num value", "data-value": row.value }, row.value_text),
      el("td", {}, row.pm),
      el("td", { class: "num stderr", "data-value": row.stderr }, row.stderr_text)))));
}

function jobHeader(job) {
  return el("p", { class: "muted", id: "job-summary" },
    "Job " + job.id + " · " + job.model + " · ", el("span", { class: "state-" + job.state }, job.state),
    " · " + job.requests_done + " / " + job.requests_total + " requests (" + job.requests_cached + " from the store)",
    job.error ? el("span", { class: "error" }, " · " + job.error) : null);
}

async function resultsPage() {
  const id = params.get("id") || "";
  const data = await api("/ui/api/job?id=" + encodeURIComponent(id));
  if (data.job.kind === "niah") { location.replace("/ui/niah?id=" + encodeURIComponent(id)); return; }
  const q = "?id=" + encodeURIComponent(id);
  const parts = [el("h1", {}, "Results: " + data.job.tasks.join(", ")), jobHeader(data.job)];
  if (!data.table) {
    parts.push(el("p", { class: "muted" }, "No results yet; this page reloads while the job runs."));
    if (data.job.state === "queued" || data.job.state === "running") setTimeout(() => location.reload(), 2000);
  } else {
    parts.push(el("div", { class: "toolbar" },
      el("a", { href: "/ui/api/results.json" + q, download: "results_" + id + ".json", id: "download-json" }, "Download JSON"),
      el("a", { href: "/ui/api/results.csv" + q, download: "results_" + id + ".csv", id: "download-csv" }, "Download CSV"),
      data.has_samples ? el("a", { href: "/ui/samples" + q }, "Samples") : el("span", { class: "muted" }, "no samples kept (log_samples off)")));
    parts.push(resultsTable(data.table.results, "Tasks", id, data.has_samples));
    if (data.table.groups.length) parts.push(el("h2", {}, "Groups"), resultsTable(data.table.groups, "Groups", id, false));
  }
  show(...parts);
}

// ---- Compare: several jobs side by side, deltas against the first with their stderr.
async function comparePage() {
  const ids = (params.get("ids") || "").split(",").filter(Boolean);
  const jobs = await Promise.all(ids.map((id) => api("/ui/api/job?id=" + encodeURIComponent(id))));
  const keys = [];
  const cells = new Map();
  jobs.forEach((data, j) => {
    for (const row of (data.table ? data.table.results : [])) {
      const key = row.task + "\u0000" + row.filter + "\u0000" + row.metric;
      if (!cells.has(key)) { cells.set(key, []); keys.push([key, row]); }
      cells.get(key)[j] = row;
    }
  });
  const header = el("tr", {}, el("th", {}, "Task"), el("th", {}, "Filter"), el("th", {}, "Metric"),
    jobs.map((data, j) => [
      el("th", { class: "num" }, el("a", { href: resultsLink(data.job) }, data.job.model + " (" + data.job.id.slice(0, 8) + ")")),
      j > 0 ? el("th", { class: "num", title: "difference to the first job; * where it exceeds twice the combined stderr" }, "Δ") : null]));
  const rows = keys.map(([key, first]) => el("tr", { "data-task": first.task, "data-metric": first.metric },
    el("td", {}, first.task), el("td", {}, first.filter), el("td", {}, first.metric + " " + first.arrow),
    jobs.map((_, j) => {
      const row = cells.get(key)[j];
      const base = cells.get(key)[0];
      const value = el("td", { class: "num value", "data-value": row ? row.value : null },
        row ? row.value_text + (row.stderr !== null && row.stderr !== undefined ? " ± " + fixed(row.stderr, 4) : "") : "—");
      if (j === 0) return value;
      let delta = "—", cls = null;
      if (row && base && row.value !== null && base.value !== null) {
        const d = row.value - base.value;
        const se = Math.sqrt((row.stderr || 0) ** 2 + (base.stderr || 0) ** 2);
        const better = first.arrow === "↓" ? d < 0 : d > 0;
        delta = (d >= 0 ? "+" : "") + d.toFixed(4) + (se > 0 ? " ± " + se.toFixed(4) : "") + (se > 0 && Math.abs(d) > 2 * se ? " *" : "");
        cls = d === 0 ? null : better ? "delta-up" : "delta-down";
      }
      return [value, el("td", { class: "num delta " + (cls || "") }, delta)];
    })));
  show(el("h1", {}, "Compare " + jobs.length + " jobs"),
    el("table", { id: "compare-table" }, el("thead", {}, header), el("tbody", {}, rows)));
}

// ---- NIAH: the grid as an SVG heatmap (length × depth), the paper's metrics beside it.
function niahColour(score, threshold) {
  if (score === null || score === undefined) return "#e5e7eb";
  // The paper's red → yellow → green, over [0, 2 × threshold] (10 for the default 5).
  const t = Math.max(0, Math.min(1, score / (2 * threshold)));
  const stops = [[240, 73, 110], [235, 184, 57], [12, 215, 159]];
  const [a, b, u] = t < 0.5 ? [stops[0], stops[1], t * 2] : [stops[1], stops[2], (t - 0.5) * 2];
  return "rgb(" + a.map((v, i) => Math.round(v + (b[i] - v) * u)).join(",") + ")";
}

async function niahPage() {
  const id = params.get("id") || "";
  const data = await api("/ui/api/job?id=" + encodeURIComponent(id));
  const parts = [el("h1", {}, "NIAH sweep"), jobHeader(data.job)];
  const grid = data.niah;
  if (!grid || grid.error) {
    parts.push(el("p", { class: grid ? "error" : "muted" }, grid ? grid.error : "No grid yet; this page reloads while the sweep runs."));
    if (!grid && (data.job.state === "queued" || data.job.state === "running")) setTimeout(() => location.reload(), 2000);
    show(...parts);
    return;
  }
  const threshold = (grid.metrics && grid.metrics.threshold) || 5;
  const cellOf = new Map(grid.cells.map((c) => [c.length + "/" + c.depth, c]));
  const w = Math.max(18, Math.min(48, Math.floor(900 / grid.lengths.length)));
  const h = Math.max(14, Math.min(32, Math.floor(480 / grid.depths.length)));
  const left = 56, top = 8, bottom = 48;
  const width = left + w * grid.lengths.length + 8, height = top + h * grid.depths.length + bottom;
  const tooltip = el("div", { id: "tooltip" });
  const chart = svg("svg", { id: "heatmap", width, height, viewBox: "0 0 " + width + " " + height, role: "img" });
  grid.depths.forEach((depth, d) => {
    chart.append(svg("text", { x: left - 6, y: top + d * h + h / 2 + 4, "text-anchor": "end" }, depth + "%"));
  });
  const step = Math.ceil(grid.lengths.length / 16);
  grid.lengths.forEach((length, l) => {
    if (l % step === 0) chart.append(svg("text", { x: left + l * w + w / 2, y: top + h * grid.depths.length + 14, "text-anchor": "middle" }, length));
    grid.depths.forEach((depth, d) => {
      const score = grid.scores[l][d];
      const cell = cellOf.get(length + "/" + depth) || {};
      const rect = svg("rect", {
        class: "cell", x: left + l * w, y: top + d * h, width: w - 1, height: h - 1,
        fill: niahColour(score, threshold), "data-length": length, "data-depth": depth,
        "data-score": score === null ? "" : score
      });
      const text = "length " + length + " · depth " + depth + "%\nscore " +
        (score === null ? "not run" : fixed(score, 2)) + (cell.success !== undefined ? (cell.success ? " (found)" : " (missed)") : "") +
        (cell.generated !== undefined ? "\ngenerated: " + String(cell.generated).slice(0, 200) : "");
      rect.addEventListener("mousemove", (e) => {
        tooltip.textContent = text; tooltip.style.display = "block";
        tooltip.style.left = (e.clientX + 12) + "px"; tooltip.style.top = (e.clientY + 12) + "px";
      });
      rect.addEventListener("mouseleave", () => { tooltip.style.display = "none"; });
      chart.append(rect);
    });
  });
  chart.append(svg("text", { x: left + w * grid.lengths.length / 2, y: height - 10, "text-anchor": "middle" }, "context length (tokens)"));
  const m = grid.metrics || {};
  const metricRows = [["weighted average accuracy", m.weighted_average_accuracy], ["NIAH score", m.niah_score],
    ["average accuracy", m.average_accuracy], ["success threshold", m.threshold]];
  for (const n of (m.named || [])) {
    metricRows.push(["acc@" + n.length, n.acc_at], ["acc≤" + n.length, n.acc_up_to]);
  }
  const metrics = el("table", { id: "niah-metrics" }, el("tbody", {}, metricRows.map(([name, value]) =>
    el("tr", {}, el("th", {}, name), el("td", { class: "num", "data-value": value }, fixed(value, 4))))));
  const q = "?id=" + encodeURIComponent(id);
  parts.push(el("div", { class: "toolbar" },
    el("a", { href: "/ui/api/results.json" + q, download: "niah_results_" + id + ".json" }, "Download JSON"),
    el("a", { href: "/ui/api/results.csv" + q, download: "niah_grid_" + id + ".csv" }, "Download CSV")),
    el("h2", {}, grid.title),
    el("div", { class: "niah" }, el("div", {}, chart, el("p", { class: "muted" }, "depth of the needle (rows) × context length (columns); score 0 (red) to " + 2 * threshold + " (green), found at ≥ " + threshold)),
      el("div", {}, el("h2", {}, "Metrics"), metrics)), tooltip);
  show(...parts);
}

// ---- Samples: a task's per-sample records, filtered and paged by the server.
async function samplesPage() {
  const id = params.get("id") || "";
  const page = Number(params.get("page") || 0), pageSize = Number(params.get("page_size") || 20);
  const query = new URLSearchParams({ id, task: params.get("task") || "", q: params.get("q") || "",
    metric: params.get("metric") || "", value: params.get("value") || "", page, page_size: pageSize });
  const data = await api("/ui/api/samples?" + query);
  const go = (changes) => {
    const next = new URLSearchParams(location.search);
    for (const [k, v] of Object.entries(changes)) next.set(k, v);
    location.search = next.toString();
  };
  const header = [el("h1", {}, "Samples"), el("p", {}, el("a", { href: "/ui/results?id=" + encodeURIComponent(id) }, "← results"))];
  if (data.error) { show(...header, el("p", { class: "error", id: "error" }, data.error)); return; }
  const filter = el("input", { id: "filter", type: "search", placeholder: "text contains…", value: params.get("q") || "" });
  const metric = el("input", { id: "metric", placeholder: "metric (acc)", size: 10, value: params.get("metric") || "" });
  const value = el("input", { id: "metric-value", placeholder: "value (0)", size: 6, value: params.get("value") || "" });
  const pages = Math.max(1, Math.ceil(data.matched / data.page_size));
  const toolbar = el("form", { class: "toolbar", onsubmit: (e) => { e.preventDefault(); go({ q: filter.value, metric: metric.value, value: value.value, page: 0 }); } },
    el("select", { id: "task", onchange: (e) => go({ task: e.target.value, page: 0 }) },
      data.tasks.map((t) => el("option", { value: t, selected: t === data.task }, t))),
    filter, metric, value, el("button", { type: "submit" }, "Filter"),
    el("button", { type: "button", id: "prev", disabled: data.page <= 0, onclick: () => go({ page: data.page - 1 }) }, "‹ prev"),
    el("span", { id: "page-info" }, "page " + (data.page + 1) + " of " + pages + " · " + data.matched + " of " + data.total + " samples"),
    el("button", { type: "button", id: "next", disabled: data.page + 1 >= pages, onclick: () => go({ page: data.page + 1 }) }, "next ›"));
  const known = new Set(["task", "doc_id", "doc", "target", "arguments", "resps", "filtered_resps", "_cut"]);
  const cards = data.samples.map((s) => {
    const resps = s.filtered_resps || s.resps || [];
    const lls = resps.map((r) => Array.isArray(r) && typeof r[0] === "number" ? r[0] : null);
    const best = lls.some((v) => v !== null) ? lls.indexOf(Math.max(...lls.filter((v) => v !== null))) : -1;
    const args = (s.arguments || []).map((a, i) => {
      const resp = resps[i];
      const isPair = Array.isArray(a) && typeof a[1] === "string";
      // The choices of one question share its context: shown once, above them.
      const sameContext = isPair && i > 0 && Array.isArray(s.arguments[i - 1]) && s.arguments[i - 1][0] === a[0];
      return el("div", { class: "request" + (i === best ? " chosen" : "") },
        isPair ? [sameContext ? null : el("pre", { class: "context" }, a[0]), el("div", {}, "continuation: ", el("code", { class: "continuation" }, JSON.stringify(a[1])))]
          : el("pre", { class: "context" }, Array.isArray(a) && typeof a[0] === "string" ? a[0] : JSON.stringify(a)),
        el("div", { class: "response" }, "response: ", typeof resp === "string" ? el("code", {}, JSON.stringify(resp)) : JSON.stringify(resp),
          i === best ? " ← highest log-likelihood" : ""));
    });
    const metrics = Object.entries(s).filter(([k]) => !known.has(k)).map(([k, v]) => k + " = " + JSON.stringify(v)).join(" · ");
    return el("div", { class: "sample", "data-doc-id": s.doc_id },
      el("div", {}, el("b", {}, "doc " + s.doc_id), " · target ", el("code", { class: "target" }, JSON.stringify(s.target)), " · ", el("span", { class: "metrics" }, metrics),
        s._cut ? el("span", { class: "muted" }, " · long texts cut") : null),
      el("details", {}, el("summary", {}, "doc"), el("pre", {}, JSON.stringify(s.doc, null, 1))),
      args);
  });
  show(...header, toolbar, data.truncated ? el("p", { class: "muted" }, "This page was cut to bound its size; use a smaller page.") : null,
    el("div", { id: "samples" }, cards));
}

// ---- Series: checkpoint series (docs/series.md); with ?id=, one series' scaling curves:
// a metric against compute on log axes per architecture, the points and the power law the
// server fitted (metrics/power_law; nothing is fitted here), and each checkpoint's job.
const seriesColours = ["#2563eb", "#dc2626", "#059669", "#d97706", "#7c3aed", "#db2777"];

async function seriesPage() {
  const id = params.get("id");
  if (!id) {
    const data = await api("/ui/api/series");
    const rows = data.series.map((s) => el("tr", { class: "series-row" },
      el("td", {}, el("a", { href: "/ui/series?id=" + encodeURIComponent(s.id) }, s.name)),
      el("td", {}, s.checkpoints), el("td", {}, s.tasks.join(", ")), el("td", { class: "muted" }, s.id)));
    show(el("h1", {}, "Series"), data.series.length === 0 ? el("p", { class: "muted" }, "No series yet: run `hgeval sweep`.") :
      el("table", { id: "series-list" }, el("thead", {}, el("tr", {}, ["name", "checkpoints", "tasks", "id"].map((h) => el("th", {}, h)))), el("tbody", {}, rows)));
    return;
  }
  const query = new URLSearchParams({ id, metric: params.get("metric") || "" });
  const data = await api("/ui/api/series_curves?" + query);
  const all = data.architectures.flatMap((a) => a.points);
  const parts = [el("h1", {}, "Series " + data.series.name),
    el("p", { class: "muted", id: "series-progress" }, data.series.points_done + " of " + data.series.checkpoints + " checkpoints done · tasks " + data.series.tasks.join(", ")),
    el("div", { class: "toolbar" }, "metric ",
      el("select", { id: "series-metric", onchange: (e) => { const next = new URLSearchParams(location.search); next.set("metric", e.target.value); location.search = next.toString(); } },
        data.metrics.map((m) => el("option", { value: m, selected: m === data.metric }, m))))];
  if (all.length === 0) {
    parts.push(el("p", { class: "muted", id: "series-empty" }, "No point has this metric and a compute yet."));
  } else {
    const width = 760, height = 420, left = 72, right = 16, top = 12, bottom = 48;
    const lx = all.map((p) => Math.log10(p.compute)), ly = all.map((p) => Math.log10(p.value));
    for (const a of data.architectures) for (const [c, v] of (a.line || [])) { lx.push(Math.log10(c)); ly.push(Math.log10(v)); }
    const pad = (lo, hi) => (hi - lo < 1e-9 ? [lo - 0.5, hi + 0.5] : [lo - 0.05 * (hi - lo), hi + 0.05 * (hi - lo)]);
    const [x0, x1] = pad(Math.min(...lx), Math.max(...lx)), [y0, y1] = pad(Math.min(...ly), Math.max(...ly));
    const X = (c) => left + (Math.log10(c) - x0) / (x1 - x0) * (width - left - right);
    const Y = (v) => top + (y1 - Math.log10(v)) / (y1 - y0) * (height - top - bottom);
    const chart = svg("svg", { id: "series-chart", width, height, viewBox: "0 0 " + width + " " + height, role: "img" });
    chart.append(svg("rect", { x: left, y: top, width: width - left - right, height: height - top - bottom, fill: "none", stroke: "#d1d5db" }));
    for (let e = Math.ceil(x0); e <= Math.floor(x1); ++e) {
      chart.append(svg("text", { x: X(10 ** e), y: height - bottom + 16, "text-anchor": "middle" }, "1e" + e));
    }
    const yTicks = 5;
    for (let i = 0; i <= yTicks; ++i) {
      const v = 10 ** (y0 + (y1 - y0) * i / yTicks);
      chart.append(svg("text", { x: left - 6, y: Y(v) + 4, "text-anchor": "end" }, v.toPrecision(3)));
    }
    chart.append(svg("text", { x: left + (width - left - right) / 2, y: height - 8, "text-anchor": "middle" }, "compute C (FLOPs, log scale)"));
    const legend = [];
    data.architectures.forEach((a, i) => {
      const colour = seriesColours[i % seriesColours.length];
      if (a.line) {
        chart.append(svg("line", { class: "fit", "data-architecture": a.architecture, x1: X(a.line[0][0]), y1: Y(a.line[0][1]),
          x2: X(a.line[1][0]), y2: Y(a.line[1][1]), stroke: colour, "stroke-width": 2 }));
      }
      for (const p of a.points) {
        chart.append(svg("circle", { class: "point", "data-architecture": a.architecture, "data-model": p.model,
          cx: X(p.compute), cy: Y(p.value), r: 4, fill: colour }, svg("title", {}, p.model + ": " + p.value)));
      }
      const f = a.fit || {};
      const interval = f.interval && f.interval.b ? " (" + Math.round((f.interval.confidence || 0.95) * 100) + "% interval " + fixed(f.interval.b[0], 4) + " … " + fixed(f.interval.b[1], 4) + ")" : "";
      legend.push(el("li", { class: "fit-legend", "data-architecture": a.architecture, style: "color:" + colour },
        a.architecture + ": " + (f.b !== undefined ? data.metric + " = " + Number(f.a).toPrecision(4) + " · C^" + fixed(f.b, 4) + interval + ", R² " + fixed(f.r2, 3) : (f.error || "no fit")) +
        " · " + a.points.length + " points"));
    });
    parts.push(el("div", {}, chart, el("ul", { id: "series-legend" }, legend)));
    if (data.truncated) parts.push(el("p", { class: "muted" }, "This series was cut to bound the answer."));
  }
  const head = ["model", "architecture", "N", "D", "C", "step", "job", "progress", data.metric];
  parts.push(el("h2", {}, "Checkpoints"), el("table", { id: "series-points" }, el("thead", {}, el("tr", {}, head.map((h) => el("th", {}, h)))),
    el("tbody", {}, data.points.map((p) => el("tr", { class: "series-point" },
      el("td", {}, p.model), el("td", {}, p.architecture), el("td", { class: "num" }, p.parameters ? Number(p.parameters).toPrecision(3) : "—"),
      el("td", { class: "num" }, p.tokens ? Number(p.tokens).toPrecision(3) : "—"), el("td", { class: "num" }, p.compute ? Number(p.compute).toPrecision(3) : "—"),
      el("td", { class: "num" }, p.step >= 0 ? p.step : "—"),
      el("td", {}, p.job_id ? el("a", { href: "/ui/results?id=" + encodeURIComponent(p.job_id) }, p.state) : "—"),
      el("td", { class: "num" }, p.requests_total ? Math.floor(100 * p.requests_done / p.requests_total) + "%" : "—"),
      el("td", { class: "num" }, fixed(p.value, 4)))))));
  if (data.series.points_done < data.series.checkpoints) setTimeout(() => location.reload(), 2000);
  show(...parts);
}

const pages = {
  "/ui": jobsPage, "/ui/": jobsPage, "/ui/results": resultsPage, "/ui/compare": comparePage,
  "/ui/niah": niahPage, "/ui/samples": samplesPage, "/ui/series": seriesPage,
};
(pages[location.pathname] || jobsPage)().catch(fail);
