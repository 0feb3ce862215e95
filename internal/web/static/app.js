// bloomd's page: reads the JSON endpoints and the server-drawn SVG plots; changes nothing.
"use strict";

const pageSize = 20;
let offset = 0, total = 0, query = "", selected = "";

function $(id) { return document.getElementById(id); }

async function getJSON(path) {
  const r = await fetch(path, {cache: "no-store"});
  if (!r.ok) throw new Error(path + ": " + r.status);
  return r.json();
}

function count(n) {
  if (n >= 1e9) return (n / 1e9).toPrecision(3) + "G";
  if (n >= 1e6) return (n / 1e6).toPrecision(3) + "M";
  if (n >= 1e3) return (n / 1e3).toPrecision(3) + "k";
  return String(n);
}
function bytes(n) {
  if (n >= 1 << 30) return (n / (1 << 30)).toFixed(2) + " GiB";
  if (n >= 1 << 20) return (n / (1 << 20)).toFixed(2) + " MiB";
  if (n >= 1 << 10) return (n / (1 << 10)).toFixed(2) + " KiB";
  return n + " B";
}
function rate(p) { return p === 0 ? "0" : p.toPrecision(3); }

function cell(tr, text, cls) {
  const td = document.createElement("td");
  td.textContent = text;
  if (cls) td.className = cls;
  tr.appendChild(td);
}

async function loadServer() {
  const s = await getJSON("api/server");
  const i = s.info;
  const dl = $("numbers");
  dl.replaceChildren();
  const rows = [["uptime", Math.round(i.UptimeSeconds) + " s"], ["clients", i.ConnectedClients + " / " + i.MaxClients],
    ["commands", count(i.CommandsProcessed)], ["keys", count(i.Keys)], ["expiring", count(i.Expiring)],
    ["memory used", bytes(i.UsedMemory)], ["memory limit", bytes(i.MemoryLimit)], ["OOM refusals", i.OOMRejections]];
  for (const [k, v] of rows) {
    const dt = document.createElement("dt"); dt.textContent = k;
    const dd = document.createElement("dd"); dd.textContent = v;
    dl.append(dt, dd);
  }
  const tb = $("commands").tBodies[0];
  tb.replaceChildren();
  for (const c of s.commands || []) {
    const tr = document.createElement("tr");
    cell(tr, c.name); cell(tr, count(c.calls)); cell(tr, c.usec_per_call.toFixed(2));
    cell(tr, c.p50_usec.toFixed(1)); cell(tr, c.p99_usec.toFixed(1)); cell(tr, c.rejected); cell(tr, c.failed);
    tb.appendChild(tr);
  }
}

// drawHistory draws ops/s and mean latency as two polylines in one SVG.
async function loadHistory() {
  const h = await getJSON("api/history");
  const W = 720, H = 200, L = 60, R = 60, T = 20, B = 30;
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  svg.setAttribute("width", W); svg.setAttribute("height", H);
  const text = (x, y, s, anchor, color) => {
    const t = document.createElementNS(ns, "text");
    t.setAttribute("x", x); t.setAttribute("y", y); t.setAttribute("font-size", "12");
    if (anchor) t.setAttribute("text-anchor", anchor);
    if (color) t.setAttribute("fill", color);
    t.textContent = s; svg.appendChild(t);
  };
  if (h.length === 0) {
    text(L, H / 2, "collecting samples (one a second)…");
  } else {
    const t0 = h[0].t, t1 = Math.max(h[h.length - 1].t, t0 + 1);
    const maxOps = Math.max(1, ...h.map(s => s.ops)), maxLat = Math.max(1, ...h.map(s => s.usec));
    const x = t => L + (W - L - R) * (t - t0) / (t1 - t0);
    const line = (key, mx, color, cls) => {
      const p = document.createElementNS(ns, "polyline");
      p.setAttribute("class", cls); p.setAttribute("fill", "none"); p.setAttribute("stroke", color);
      p.setAttribute("points", h.map(s => `${x(s.t).toFixed(1)},${(T + (H - T - B) * (1 - s[key] / mx)).toFixed(1)}`).join(" "));
      svg.appendChild(p);
    };
    line("ops", maxOps, "#1f77b4", "ops");
    line("usec", maxLat, "#d62728", "latency");
    text(L - 4, T + 4, count(Math.round(maxOps)) + " ops/s", "end", "#1f77b4");
    text(W - R + 4, T + 4, maxLat.toFixed(1) + " µs", "start", "#d62728");
    text(L, H - 8, Math.round((t1 - t0) / 60 * 10) / 10 + " min", "start");
  }
  $("throughput").replaceChildren(svg);
}

async function loadFilters() {
  const r = await getJSON(`api/filters?q=${encodeURIComponent(query)}&offset=${offset}&limit=${pageSize}`);
  total = r.total;
  const tb = $("filter-table").tBodies[0];
  tb.replaceChildren();
  for (const f of r.filters) {
    const tr = document.createElement("tr");
    tr.dataset.name = f.name;
    if (f.name === selected) tr.className = "selected";
    cell(tr, f.name); cell(tr, f.type); cell(tr, bytes(f.bytes)); cell(tr, count(f.items)); cell(tr, count(f.capacity));
    cell(tr, f.subfilters); cell(tr, (100 * f.fill).toFixed(1) + "%");
    cell(tr, rate(f.fpp), f.fpp > f.target ? "over" : ""); cell(tr, rate(f.target));
    tr.addEventListener("click", () => showFilter(f.name));
    tb.appendChild(tr);
  }
  const last = Math.min(offset + pageSize, total);
  $("page-info").textContent = total === 0 ? "no filters" : `${offset + 1}–${last} of ${total}`;
  $("prev").disabled = offset === 0;
  $("next").disabled = last >= total;
}

async function showFilter(name) {
  selected = name;
  for (const tr of $("filter-table").tBodies[0].rows) tr.className = tr.dataset.name === name ? "selected" : "";
  const r = await fetch("api/filter.svg?name=" + encodeURIComponent(name), {cache: "no-store"});
  $("filter-plot").innerHTML = r.ok ? await r.text() : "";
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
refresh();
loadFilters();
calc();
setInterval(refresh, 5000);
