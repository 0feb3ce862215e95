// bloomd's page: reads the JSON endpoints and the server-drawn SVG plots; changes nothing.
// Names of keys are shown only through textContent, never parsed as HTML; a filter's address
// (#/filter/KEY) carries its name percent-encoded by the server, byte for byte.
"use strict";

const pageSize = 20;
let offset = 0, total = 0, query = "", selected = "";

function $(id) { return document.getElementById(id); }

async function getJSON(path) {
  const r = await fetch(path, {cache: "no-store"});
  if (!r.ok) throw new Error(path + ": " + r.status);
  return r.json();
}

// full writes a count in full, with thousands separators: 338,521.
function full(n) { return Number(n).toLocaleString("en-US"); }
function bytes(n) {
  if (n >= 1 << 30) return (n / (1 << 30)).toFixed(2) + " GiB";
  if (n >= 1 << 20) return (n / (1 << 20)).toFixed(2) + " MiB";
  if (n >= 1 << 10) return (n / (1 << 10)).toFixed(2) + " KiB";
  return n + " B";
}
function rate(p) { return p === 0 ? "0" : p.toPrecision(3); }
function duration(s) {
  s = Math.floor(s);
  if (s < 60) return s + " s";
  if (s < 3600) return Math.floor(s / 60) + " min " + (s % 60) + " s";
  if (s < 86400) return Math.floor(s / 3600) + " h " + Math.floor(s % 3600 / 60) + " min";
  return Math.floor(s / 86400) + " d " + Math.floor(s % 86400 / 3600) + " h";
}

function cell(tr, text, cls) {
  const td = document.createElement("td");
  td.textContent = text;
  if (cls) td.className = cls;
  tr.appendChild(td);
  return td;
}

async function loadServer() {
  const s = await getJSON("api/server");
  const i = s.info;
  const dl = $("numbers");
  dl.replaceChildren();
  const rows = [["uptime", duration(i.UptimeSeconds)], ["clients", full(i.ConnectedClients) + " / " + full(i.MaxClients)],
    ["commands", full(i.CommandsProcessed)], ["keys", full(i.Keys)], ["expiring", full(i.Expiring)],
    ["memory used", bytes(i.UsedMemory)], ["memory limit", bytes(i.MemoryLimit)], ["OOM refusals", full(i.OOMRejections)]];
  for (const [k, v] of rows) {
    const dt = document.createElement("dt"); dt.textContent = k;
    const dd = document.createElement("dd"); dd.textContent = v; dd.dataset.name = k;
    dl.append(dt, dd);
  }
  const tb = $("commands").tBodies[0];
  tb.replaceChildren();
  for (const c of s.commands || []) {
    const tr = document.createElement("tr");
    tr.dataset.name = c.name;
    // A command that was only refused has no calls, hence no time and no percentiles.
    const none = c.calls === 0 || c.p50_usec === null;
    cell(tr, c.name); cell(tr, full(c.calls)); cell(tr, c.calls === 0 ? "—" : c.usec_per_call.toFixed(2));
    cell(tr, none ? "—" : c.p50_usec.toFixed(1)); cell(tr, none ? "—" : c.p99_usec.toFixed(1));
    cell(tr, full(c.rejected)); cell(tr, full(c.failed));
    tb.appendChild(tr);
  }
}

// The throughput chart: operations a second (left axis) and their mean latency (right axis),
// drawn in SVG here. Tick labels are measured before the margins are set, so that none is cut.

const svgNS = "http://www.w3.org/2000/svg";

function svgEl(name, attrs, parent) {
  const e = document.createElementNS(svgNS, name);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (parent) parent.appendChild(e);
  return e;
}

// niceStep returns the smallest of 1, 2 and 5 times a power of ten that is at least raw.
function niceStep(raw) {
  if (!(raw > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 5]) if (m * p >= raw * (1 - 1e-9)) return m * p;
  return 10 * p;
}

// tickText writes a round number short: 0, 0.5, 250, 100k, 1.5M.
function tickText(v) {
  const r = x => String(Number(x.toPrecision(6)));
  if (v >= 1e9) return r(v / 1e9) + "G";
  if (v >= 1e6) return r(v / 1e6) + "M";
  if (v >= 1e3) return r(v / 1e3) + "k";
  return r(v);
}

// Spans of the time axis, with the step of their ticks, in seconds: the shortest that holds
// the samples is drawn, so that a young server's minute of samples fills the chart.
const spans = [[30, 10], [60, 15], [120, 30], [300, 60], [600, 120]];
function ago(s) { return s === 0 ? "now" : s < 60 ? `−${s} s` : `−${s / 60} min`; }

function textWidth(t) {
  const w = t.getComputedTextLength();
  return w > 0 ? w : 7 * t.textContent.length; // not laid out (hidden): a generous guess
}

async function loadHistory() {
  const h = await getJSON("api/history");
  const W = 720, H = 230, T = 30, B = 24, steps = 4;
  const svg = svgEl("svg", {viewBox: `0 0 ${W} ${H}`, width: W, height: H, class: "history"});
  $("throughput").replaceChildren(svg);
  const text = (s, attrs) => { const t = svgEl("text", attrs, svg); t.textContent = s; return t; };
  if (h.length === 0) {
    text("collecting samples (one a second)…", {x: 10, y: H / 2});
    return;
  }
  const peakOps = Math.max(...h.map(s => s.ops)), peakLat = Math.max(...h.map(s => s.usec));
  const opsStep = niceStep(peakOps / steps), latStep = niceStep(peakLat / steps);
  svg.dataset.peakOps = Math.round(peakOps);
  svg.dataset.peakUsec = peakLat.toFixed(1);

  const now = h[h.length - 1].t;
  const [span, every] = spans.find(([s]) => s >= now - h[0].t) || spans[spans.length - 1];
  const start = now - span;

  // Make every label, measure, then place.
  const left = [], right = [], bottom = [];
  for (let i = 0; i <= steps; i++) {
    left.push(text(tickText(i * opsStep), {class: "tick ops", "text-anchor": "end"}));
    right.push(text(tickText(i * latStep), {class: "tick latency", "text-anchor": "start"}));
  }
  for (let s = span; s >= 0; s -= every) bottom.push([s, text(ago(s), {class: "tick time", "text-anchor": "middle"})]);
  const widest = ts => Math.max(...ts.map(textWidth));
  const halfFirst = textWidth(bottom[0][1]) / 2, halfLast = textWidth(bottom[bottom.length - 1][1]) / 2;
  const L = Math.ceil(Math.max(widest(left) + 8, halfFirst + 2));
  const R = Math.ceil(Math.max(widest(right) + 8, halfLast + 2));
  const x = t => L + (W - L - R) * (t - start) / span;
  const y = (v, top) => T + (H - T - B) * (1 - v / top);

  for (let i = 0; i <= steps; i++) {
    const yy = y(i, steps);
    svgEl("line", {class: "grid", x1: L, x2: W - R, y1: yy, y2: yy}, svg);
    left[i].setAttribute("x", L - 6); left[i].setAttribute("y", yy + 4);
    right[i].setAttribute("x", W - R + 6); right[i].setAttribute("y", yy + 4);
  }
  for (const [s, t] of bottom) {
    const xx = x(now - s);
    svgEl("line", {class: "grid", x1: xx, x2: xx, y1: T, y2: H - B}, svg);
    t.setAttribute("x", xx); t.setAttribute("y", H - 6);
  }
  const pt = (s, key, top) => `${x(s.t).toFixed(1)},${y(s[key], top).toFixed(1)}`;
  svgEl("polyline", {class: "ops", fill: "none", points: h.map(s => pt(s, "ops", opsStep * steps)).join(" ")}, svg);
  // A second without calls has no latency: the line breaks there rather than drop to 0.
  let d = "", gap = true;
  for (const s of h) {
    if (s.ops === 0) { gap = true; continue; }
    d += (gap ? "M" : "L") + pt(s, "usec", latStep * steps) + " ";
    gap = false;
  }
  svgEl("path", {class: "latency", fill: "none", d: d.trim() || "M0,0"}, svg);
  text(`ops/s (peak ${full(Math.round(peakOps))})`, {class: "legend ops", x: L, y: 16, "text-anchor": "start"});
  text(`mean latency µs (peak ${full(Number(peakLat.toFixed(1)))})`, {class: "legend latency", x: W - R, y: 16, "text-anchor": "end"});
}

async function loadFilters() {
  const r = await getJSON(`api/filters?q=${encodeURIComponent(query)}&offset=${offset}&limit=${pageSize}`);
  total = r.total;
  $("user").textContent = r.user === "default" ? "" : "user " + r.user;
  $("filter-note").textContent = r.all_keys ? "" :
    `Only the filters that user ${r.user} may read are listed and counted.`;
  const tb = $("filter-table").tBodies[0];
  tb.replaceChildren();
  for (const f of r.filters) {
    const tr = document.createElement("tr");
    tr.dataset.key = f.key;
    tr.dataset.type = f.type;
    if (f.key === selected) tr.className = "selected";
    const a = document.createElement("a");
    a.href = "#/filter/" + f.key;
    a.textContent = f.name;
    cell(tr, "").appendChild(a);
    cell(tr, f.type); cell(tr, bytes(f.bytes)); cell(tr, full(f.items)); cell(tr, full(f.capacity));
    cell(tr, full(f.subfilters)); cell(tr, (100 * f.fill).toFixed(1) + "%");
    if (f.fpp === null) {
      cell(tr, "—"); cell(tr, "—");
    } else {
      cell(tr, rate(f.fpp), f.fpp > f.target ? "over" : ""); cell(tr, rate(f.target));
    }
    tr.addEventListener("click", ev => { if (ev.target.tagName !== "A") location.hash = "#/filter/" + f.key; });
    tb.appendChild(tr);
  }
  const last = Math.min(offset + pageSize, total);
  $("page-info").textContent = total === 0 ? "no filters" : `${offset + 1}–${last} of ${total}`;
  $("prev").disabled = offset === 0;
  $("next").disabled = last >= total;
}

// showFilter shows the filter whose percent-encoded name is key: its facts (BF.INFO's or
// CF.INFO's) and, for a Bloom filter, its false-positive rate as items grow.
async function showFilter(key) {
  selected = key;
  for (const tr of $("filter-table").tBodies[0].rows) tr.className = tr.dataset.key === key ? "selected" : "";
  const sec = $("filter");
  sec.hidden = false;
  sec.dataset.key = key;
  $("filter-link").href = "#/filter/" + key;
  const facts = $("filter-facts"), plot = $("filter-plot");
  const r = await fetch("api/filter?key=" + key, {cache: "no-store"});
  if (selected !== key) return;
  if (!r.ok) {
    $("filter-name").textContent = decodeKey(key);
    $("filter-type").textContent = "";
    $("filter-error").textContent = "No such filter, or not one this user may read.";
    facts.replaceChildren(); plot.replaceChildren();
    return;
  }
  const f = await r.json();
  $("filter-error").textContent = "";
  $("filter-name").textContent = f.name;
  $("filter-type").textContent = f.type === "cuckoo" ? "cuckoo filter" : "Bloom filter";
  facts.replaceChildren();
  for (const {label, value} of f.facts) {
    const dt = document.createElement("dt"); dt.textContent = label;
    const dd = document.createElement("dd"); dd.textContent = value === null ? "—" : full(value);
    facts.append(dt, dd);
  }
  if (f.type !== "bloom") { plot.replaceChildren(); return; }
  const svg = await fetch("api/filter.svg?key=" + key, {cache: "no-store"});
  if (selected === key) plot.innerHTML = svg.ok ? await svg.text() : ""; // drawn by the server, text escaped
}

// decodeKey shows a key of the address when the server does not know it.
function decodeKey(key) {
  try { return decodeURIComponent(key); } catch { return key; }
}

// route shows the filter the address names (#/filter/KEY), if any. The server writes KEY
// percent-encoded; a name typed by hand may hold characters that mean something in a query
// (& = + # ?), which are encoded here so that they mean themselves.
function route() {
  const m = /^#\/filter\/(.+)$/.exec(location.hash);
  if (m) {
    showFilter(m[1].replace(/[^A-Za-z0-9\-._~:@*,!()$\/%]/g, c => encodeURIComponent(c))).catch(console.warn);
  } else {
    selected = "";
    $("filter").hidden = true;
    for (const tr of $("filter-table").tBodies[0].rows) tr.className = "";
  }
}

async function calc(ev) {
  if (ev) ev.preventDefault();
  const n = $("calc-n").value.trim(), p = $("calc-p").value.trim();
  const q = `n=${encodeURIComponent(n)}&p=${encodeURIComponent(p)}`;
  const r = await fetch("api/calc?" + q);
  const body = await r.json();
  const tb = $("calc-table").tBodies[0];
  tb.replaceChildren();
  $("calc-error").textContent = body.error || "";
  if (!r.ok) { $("calc-plot").replaceChildren(); return; }
  for (const row of body.rows) {
    const tr = document.createElement("tr");
    tr.dataset.rule = row.rule;
    cell(tr, row.rule);
    if (row.error) { cell(tr, row.error); tb.appendChild(tr); continue; }
    cell(tr, row.bits); cell(tr, row.bytes); cell(tr, row.k); cell(tr, row.bits_per_item.toFixed(2));
    for (const k of ["¼n", "½n", "n", "2n", "4n"]) cell(tr, rate(row.fpp[k]));
    tb.appendChild(tr);
  }
  const svg = await fetch("api/calc.svg?" + q);
  $("calc-plot").innerHTML = svg.ok ? await svg.text() : "";
}

function refresh() {
  loadServer().catch(console.warn);
  loadHistory().catch(console.warn);
}

$("search").addEventListener("submit", ev => { ev.preventDefault(); query = $("q").value; offset = 0; loadFilters(); });
$("prev").addEventListener("click", () => { offset = Math.max(0, offset - pageSize); loadFilters(); });
$("next").addEventListener("click", () => { offset += pageSize; loadFilters(); });
$("calc").addEventListener("submit", calc);
window.addEventListener("hashchange", route);
refresh();
loadFilters().then(route).catch(console.warn);
calc();
setInterval(refresh, 5000);
