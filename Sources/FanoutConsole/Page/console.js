"use strict";
// The protocol is spoken by the Fanout client above (clients/js, its one-file browser build): reconnects,
// resumes concrete subjects with no duplicate, and reports what was missed; this script only draws.
const $ = (id) => document.getElementById(id);
const maxRows = 500;
let client = null, history = [], lastPublished = null, timer = null, groupsByPattern = new Map();
// A token in the page's address (`/?token=...`, as an application links to the console) is taken once and
// removed from the address bar, so that it is not left in the history or shown over a shoulder (window.history:
// `history` here is the chart's).
const linked = new URLSearchParams(location.search).get("token");
if (linked) {
  sessionStorage.setItem("fanout-token", linked);
  const clean = new URL(location.href); clean.searchParams.delete("token");
  window.history.replaceState(null, "", clean.pathname + clean.search + clean.hash);
}
let token = sessionStorage.getItem("fanout-token") || "";
const subscriptions = new Map();

function setStatus(text, kind) { const s = $("status"); s.textContent = text; s.className = kind || ""; }
function row(list, html) { const li = document.createElement("li"); li.innerHTML = html; list.prepend(li); while (list.children.length > maxRows) list.lastChild.remove(); return li; }
function esc(text) { return String(text).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]); }
function now() { return new Date().toLocaleTimeString(); }
function failure(error) { return error.code ? `-ERR ${error.code} ${error.text}` : String(error.message || error); }

// What the client reports about the connection; resumes and RESET pushes (a subject's numbering restarted,
// or messages lost to it on several nodes) go into the messages list, where the gap would be.
function onEvent(event) {
  if (event.kind === "disconnected" || event.kind === "reconnecting") setStatus("disconnected, reconnecting…", "down");
  else if (event.kind === "connected") setStatus("connected", "up");
  else if (event.kind === "reset" || event.kind === "resumed") {
    const li = row($("messages"), `<span class="time">${now()}</span><span class="${event.kind === "reset" ? "error" : "note"}">${event.kind === "reset" ? "RESET" : "resumed"} ${esc(event.detail || event.report.subject)}</span>`);
    li.dataset.event = event.kind; li.dataset.subject = event.report.subject;
  } else if (event.kind === "revoked" || event.kind === "resubscribe-failed") $("sub-note").textContent = event.detail;
  else if (event.kind === "auth-expired") askToken("Your token expired: paste a fresh one to stay connected", event.detail);
}

// The token box: asked for when the server needs a token, when it expires, or with the Token button. On a
// live connection a fresh token goes as AUTH (subscriptions stay); otherwise the console connects with it.
function askToken(title, detail) {
  $("auth-title").textContent = title; $("auth-error").textContent = detail || ""; $("auth").className = "shown"; $("auth-token").focus();
}

async function start() {
  const url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws";
  try {
    // The token as a function: each reconnect takes the one the box last got.
    client = await Fanout.connect(url, { token: token ? () => token : undefined, onEvent, reconnect: { initial: 500, maximum: 5000 }, logger: { info() {}, warn() {} } });
  } catch (error) {
    if (error instanceof Fanout.Denied) { token = ""; sessionStorage.removeItem("fanout-token"); askToken("This server needs a token", failure(error)); return; }
    setStatus("disconnected, reconnecting…", "down"); setTimeout(start, 1000); return;
  }
  const greeting = client.greeting;
  $("server").textContent = `fanout/1 ${greeting.serverName} auth=${greeting.authRequired ? "required" : "none"}${greeting.epoch ? " epoch=" + greeting.epoch : ""}`;
  if (greeting.authRequired && !token) { await client.close(); client = null; askToken("This server needs a token"); return; }
  $("auth").className = ""; setStatus("connected", "up");
  await learnKickRight();
  for (const pattern of [...subscriptions.keys()]) follow(pattern);
  poll(); timer = setInterval(poll, 1000);
}

$("auth-form").onsubmit = async (event) => { event.preventDefault(); token = $("auth-token").value.trim(); if (!token) return;
  sessionStorage.setItem("fanout-token", token); $("auth-error").textContent = ""; $("auth-token").value = "";
  if (!client) { start(); return; }
  try { await client.request("AUTH " + token); $("auth").className = ""; await learnKickRight(); } catch (error) { $("auth-error").textContent = failure(error); }
};
$("auth-cancel").onclick = () => { $("auth").className = ""; };
$("token-button").onclick = () => askToken("Token", "A users-file token or a JWT; on a live connection it is sent with AUTH.");

let ticks = 0;
async function poll() {
  if (!client) return;
  try {
    info(await client.info());
    if (ticks % 2 === 0) { await groups(); channels(await client.request("CHANNELS").catch((e) => e)); }
    if (ticks % 5 === 0) clients(await client.request("CLIENTS").catch((e) => e));
  } catch (error) { /* offline: the next tick after the reconnect draws again */ }
  ticks++;
}

function info(f) {
  const published = Number(f.published);
  const shown = [["clients", "clients"], ["subjects", "subjects"], ["subscriptions", "subscriptions"], ["published", "published"],
    ["delivered", "delivered"], ["slow_consumers", "slow consumers"], ["history_messages", "retained"], ["uptime_s", "uptime (s)"]];
  $("counters").innerHTML = shown.map(([k, label]) => `<div class="counter"><b>${esc(Number(f[k] || 0).toLocaleString())}</b><span>${label}</span></div>`).join("");
  if (lastPublished !== null) { history.push(Math.max(0, published - lastPublished)); if (history.length > 300) history.shift(); draw(); }
  lastPublished = published;
}

function draw() {
  const canvas = $("chart"), ratio = window.devicePixelRatio || 1, width = canvas.clientWidth, height = canvas.clientHeight;
  canvas.width = width * ratio; canvas.height = height * ratio;
  const g = canvas.getContext("2d"); g.scale(ratio, ratio); g.clearRect(0, 0, width, height);
  const top = Math.max(10, ...history), step = width / 299;
  g.strokeStyle = "#27313c"; g.fillStyle = "#8593a3"; g.font = "11px system-ui"; g.lineWidth = 1;
  for (const part of [0.25, 0.5, 0.75, 1]) { const y = height - part * (height - 14); g.beginPath(); g.moveTo(0, y); g.lineTo(width, y); g.stroke(); g.fillText(Math.round(top * part).toLocaleString(), 4, y - 2); }
  g.beginPath(); g.strokeStyle = "#4fb3ff"; g.lineWidth = 2;
  history.forEach((value, i) => { const x = width - (history.length - 1 - i) * step, y = height - (value / top) * (height - 14); i ? g.lineTo(x, y) : g.moveTo(x, y); });
  g.stroke();
}

function channels(reply) {
  if (typeof reply !== "string") { $("channels-note").textContent = failure(reply); return; }
  const words = reply.split(" ").slice(1);
  $("channels").innerHTML = words.map((w) => { const i = w.lastIndexOf("="), subject = w.slice(0, i);
    return `<tr><td>${esc(subject)}</td><td>${esc(w.slice(i + 1))}</td><td>${esc((groupsByPattern.get(subject) || []).join(", "))}</td></tr>`; }).join("");
  $("channels-note").textContent = words.length ? "" : "No subscribed subjects.";
}

// The groups (QSUB) and their members, by pattern, from GET /groups: the subjects table's third column.
async function groups() {
  try {
    const response = await fetch("/groups" + (token ? "?token=" + encodeURIComponent(token) : ""));
    if (!response.ok) return;
    const listing = await response.json(), next = new Map();
    for (const g of listing.groups) { const list = next.get(g.pattern) || []; list.push(`${g.group} (${g.members})`); next.set(g.pattern, list); }
    groupsByPattern = next;
  } catch (error) { /* the next poll tries again */ }
}

function clients(reply) {
  if (typeof reply !== "string") { $("clients-note").textContent = failure(reply).includes("admin") ? "Listing clients needs an admin user." : failure(reply); $("clients").innerHTML = ""; return; }
  $("clients-note").textContent = "";
  $("clients").innerHTML = reply.split(" ").slice(1).map((entry) => { const f = {}; for (const p of entry.split(",")) { const i = p.indexOf("="); f[p.slice(0, i)] = p.slice(i + 1); }
    return `<tr data-client="${esc(f.id)}"><td>${esc(f.id)}</td><td>${esc(f.user || "")}</td><td>${esc(f.addr)}</td><td>${esc(f.transport || "")}</td><td>${esc(f.subs)}</td><td>${esc(f.pending)}</td><td>${esc(f.age_s)} s</td><td>${kickButton(f.id)}</td></tr>`; }).join("");
}

// KICK (1.3): a button per client row and per member, shown only on a connection that may kick. The console
// learns that by sending `KICK 0`, which closes nothing (no connection has id 0) and is refused (-ERR denied)
// to a connection that is not an administrator.
let mayKick = false;
async function learnKickRight() {
  mayKick = await client.request("KICK 0").then(() => true, () => false);
  document.body.dataset.mayKick = String(mayKick);
}
function kickButton(target) { return mayKick ? `<button type="button" class="kick" data-kick="${esc(target)}">Kick</button>` : ""; }
async function kick(target) {
  const note = $("members-note");
  try { const closed = await client.request("KICK " + target); note.textContent = `Kicked ${target}: ${closed} connection(s) closed at ${now()}.`; note.className = "note"; }
  catch (error) { note.textContent = failure(error); note.className = "note error"; }
  clients(await client.request("CLIENTS").catch((e) => e));
}
document.addEventListener("click", (event) => { const button = event.target.closest("button.kick"); if (button && client) kick(button.dataset.kick); });

// The members of one subject (1.3): WHO lists them, oldest first, then the joins and leaves the server publishes
// on $presence.<subject> keep the list. The presence subscription is made before WHO is asked, so no event falls
// between; one that reaches the page after the listing it is already in sets the same member again, or removes
// one already gone, and leaves the list as it is.
let members = new Map(), membersSubject = null, membersSub = null;
function parseMember(word) {
  const f = {}; for (const p of word.split(",")) { const i = p.indexOf("="); if (i > 0) f[p.slice(0, i)] = p.slice(i + 1); }
  if (!f.id) return null;
  return { id: f.id, user: f.user || "-", since: Date.now() - Number(f.since_s || 0) * 1000, group: f.group || "", reason: f.reason };
}
function applyPresence(payload) {
  const space = payload.indexOf(" "), kind = payload.slice(0, space), member = parseMember(payload.slice(space + 1));
  if (!member) return;
  if (kind === "join") { if (!members.has(member.id)) members.set(member.id, member); }
  else if (kind === "leave") members.delete(member.id);
  drawMembers();
}
function drawMembers() {
  $("members").innerHTML = [...members.values()].map((m) => `<tr data-client="${esc(m.id)}"><td>${esc(m.id)}</td><td>${esc(m.user)}</td><td>${Math.max(0, Math.round((Date.now() - m.since) / 1000))} s</td><td>${esc(m.group)}</td><td>${kickButton(m.id)}</td></tr>`).join("");
}
async function showMembers(subject) {
  if (membersSub) { const old = membersSub; membersSub = null; old.unsubscribe().catch(() => {}); }
  members = new Map(); membersSubject = subject; drawMembers();
  const note = $("members-note");
  try {
    const sub = client.subscribe("$presence." + subject); await sub.ready; membersSub = sub;
    (async () => { try { for await (const m of sub) if (membersSubject === subject) applyPresence(m.text); } catch (error) { /* unsubscribed */ } })();
    const words = (await client.request("WHO " + subject + " 1000")).split(" "), count = Number(words[0]);
    for (const word of words.slice(1)) { const m = parseMember(word); if (m) members.set(m.id, m); }
    drawMembers();
    note.textContent = `${count} member(s) of ${subject}` + (count > members.size ? `, the first ${members.size} listed` : "") + "; joins and leaves follow live.";
    note.className = "note";
  } catch (error) { note.textContent = failure(error); note.className = "note error"; }
}
$("members-form").onsubmit = (event) => { event.preventDefault(); const subject = $("members-subject").value.trim(); if (subject && client) showMembers(subject); };

// One subscription per pattern; its messages are drawn as they come.
async function follow(pattern) {
  const sub = client.subscribe(pattern);
  subscriptions.set(pattern, sub);
  try { await sub.ready; } catch (error) { subscriptions.delete(pattern); throw error; }
  (async () => {
    try {
      for await (const m of sub) {
        const li = row($("messages"), `<span class="time">${now()}</span><span class="subject">${esc(m.subject)}</span> <span class="seq">#${esc(m.seq)}</span> ${esc(m.text)}`);
        li.dataset.subject = m.subject; li.dataset.payload = m.text;
      }
    } catch (error) { $("sub-note").textContent = failure(error); }
  })();
}

$("sub-form").onsubmit = async (event) => { event.preventDefault(); const pattern = $("sub-pattern").value.trim(); if (!pattern || !client) return;
  if (subscriptions.has(pattern)) return;
  try { await follow(pattern); $("sub-note").textContent = "Subscribed to " + [...subscriptions.keys()].join(", "); $("sub-note").className = "note"; }
  catch (error) { $("sub-note").textContent = failure(error); $("sub-note").className = "note error"; } };
$("sub-clear").onclick = async () => { const subs = [...subscriptions.values()]; subscriptions.clear(); for (const sub of subs) await sub.unsubscribe();
  $("messages").innerHTML = ""; $("sub-note").textContent = "Unsubscribed from everything."; };

$("pub-form").onsubmit = async (event) => { event.preventDefault(); const subject = $("pub-subject").value.trim(); if (!subject || !client) return;
  try { const receivers = await client.publish(subject, $("pub-payload").value); $("pub-result").textContent = `Delivered to ${receivers} subscriber(s) at ${now()}.`; $("pub-result").className = "note"; }
  catch (error) { $("pub-result").textContent = failure(error); $("pub-result").className = "note error"; } };

// A question to every receiver of a subject; each answer is listed as it arrives, then the summary.
$("ask-form").onsubmit = async (event) => { event.preventDefault(); const subject = $("ask-subject").value.trim(); if (!subject || !client) return;
  $("ask-log").innerHTML = ""; $("ask-note").textContent = "Asking " + subject + "…"; $("ask-note").className = "note";
  const onAnswer = (a) => { const li = row($("ask-log"), `<span class="time">${now()}</span><span class="subject">${esc(a.responder)}</span> ${esc(a.text)}`);
    li.dataset.answer = a.text; li.dataset.responder = a.responder; };
  try { const result = await client.ask(subject, $("ask-payload").value, { timeout: Number($("ask-timeout").value) || 2000, onAnswer });
    $("ask-note").textContent = `${result.answered} of ${result.asked} answered` + (result.gone ? `, ${result.gone} gone` : "") + ` at ${now()}.`; }
  catch (error) { $("ask-note").textContent = failure(error); $("ask-note").className = "note error"; } };

let source = null;
$("es-form").onsubmit = (event) => { event.preventDefault(); const subjects = $("es-subject").value.trim().split(/[\s,]+/).filter(Boolean); if (!subjects.length) return;
  if (source) source.close();
  $("es-log").innerHTML = "";
  const query = subjects.map((s) => "subject=" + encodeURIComponent(s)).join("&") + (token ? "&token=" + encodeURIComponent(token) : "");
  source = new EventSource("/events?" + query);
  source.onopen = () => { $("es-note").textContent = "Stream open (" + subjects.join(", ") + ")"; $("es-note").dataset.opens = String(Number($("es-note").dataset.opens || 0) + 1); };
  source.onerror = () => { $("es-note").textContent = "Stream interrupted, reconnecting…"; };
  source.onmessage = (e) => { const m = JSON.parse(e.data);
    const li = row($("es-log"), `<span class="time">${now()}</span><span class="subject">${esc(m.subject)}</span> <span class="seq">#${m.seq}</span> ${esc(m.payload)}`);
    li.dataset.subject = m.subject; li.dataset.seq = m.seq; li.dataset.payload = m.payload; };
  source.addEventListener("missed", (e) => row($("es-log"), `<span class="error">missed: ${esc(e.data)}</span>`));
  source.addEventListener("error", (e) => { if (e.data) row($("es-log"), `<span class="error">${esc(e.data)}</span>`); }); };

window.addEventListener("resize", draw);
start();
