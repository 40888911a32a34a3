/// The operator's console at `GET /`: one self-contained page (HTML, CSS and JS, no CDN, no framework)
/// compiled into the binary, so that it works offline and always matches the server it comes from.
///
/// It speaks the protocol over the WebSocket at `/ws` through the Fanout JavaScript client (clients/js), whose
/// one-file browser build is embedded below between the `fanout-client` script tags: the browser side of the
/// protocol is written once. `node clients/js/scripts/embed-console.mjs` refreshes that copy after a change to
/// the client, and the client's tests fail while it is stale. The page shows INFO every second for the
/// counters and the messages-per-second chart (the last five minutes), CHANNELS every two seconds, CLIENTS
/// every five (admins only on a server with users); the subscribe box subscribes (concrete subjects resume
/// after a reconnect, and resumes and `RESET` pushes are shown among the messages), and the publish form
/// publishes; the subjects table shows the groups holding each pattern (`GET /groups`), and the ask box puts a
/// question and lists the answers as they arrive. It asks for a token when the greeting says `auth=required`, keeps it for the tab's session only,
/// and reconnects by itself. The event-stream panel opens an `EventSource` on `/events`, which resumes by
/// itself after a drop.
enum ConsolePage {
    static let html: [UInt8] = Array(text.utf8)

    private static let text = #"""
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Fanout console</title>
<style>
:root { --bg:#0f1419; --panel:#171d24; --line:#27313c; --text:#d7dde4; --dim:#8593a3; --accent:#4fb3ff; --good:#5fd38d; --bad:#ff6b6b; }
* { box-sizing: border-box; }
body { margin:0; background:var(--bg); color:var(--text); font:14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; }
header { display:flex; align-items:center; gap:16px; padding:12px 20px; border-bottom:1px solid var(--line); }
header h1 { font-size:17px; margin:0; font-weight:600; letter-spacing:.02em; }
#status { font-size:12px; padding:2px 10px; border-radius:10px; background:var(--line); color:var(--dim); }
#status.up { background:#173d2a; color:var(--good); }
#status.down { background:#47201f; color:var(--bad); }
#server { color:var(--dim); font-size:12px; margin-left:auto; }
main { display:grid; grid-template-columns:repeat(12, 1fr); gap:14px; padding:14px 20px 24px; }
section { background:var(--panel); border:1px solid var(--line); border-radius:8px; padding:12px 14px; min-width:0; }
section h2 { font-size:12px; text-transform:uppercase; letter-spacing:.08em; color:var(--dim); margin:0 0 10px; font-weight:600; }
.wide { grid-column:span 12; } .half { grid-column:span 6; } .third { grid-column:span 4; } .two-thirds { grid-column:span 8; }
@media (max-width: 900px) { .half, .third, .two-thirds { grid-column:span 12; } }
#counters { display:grid; grid-template-columns:repeat(auto-fit, minmax(120px, 1fr)); gap:10px; }
.counter { background:var(--bg); border:1px solid var(--line); border-radius:6px; padding:8px 10px; }
.counter b { display:block; font-size:20px; font-variant-numeric:tabular-nums; font-weight:600; }
.counter span { color:var(--dim); font-size:12px; }
canvas { width:100%; height:160px; display:block; }
table { width:100%; border-collapse:collapse; font-variant-numeric:tabular-nums; }
th, td { text-align:left; padding:4px 6px; border-bottom:1px solid var(--line); white-space:nowrap; overflow:hidden; text-overflow:ellipsis; max-width:260px; }
th { color:var(--dim); font-weight:500; font-size:12px; }
.scroll { max-height:260px; overflow:auto; }
form { display:flex; gap:8px; flex-wrap:wrap; margin-bottom:10px; }
input { background:var(--bg); color:var(--text); border:1px solid var(--line); border-radius:5px; padding:6px 8px; font:inherit; min-width:0; flex:1; }
input:focus { outline:none; border-color:var(--accent); }
button { background:var(--accent); color:#04121f; border:0; border-radius:5px; padding:6px 14px; font:inherit; font-weight:600; cursor:pointer; }
button.quiet { background:var(--line); color:var(--text); }
ol { list-style:none; margin:0; padding:0; font:12.5px/1.5 ui-monospace, SFMono-Regular, Menlo, monospace; }
ol li { padding:2px 4px; border-bottom:1px solid var(--line); word-break:break-all; }
ol li .subject { color:var(--accent); } ol li .seq { color:var(--dim); } ol li .time { color:var(--dim); float:right; }
.note { color:var(--dim); font-size:12px; }
.error { color:var(--bad); }
#auth { position:fixed; inset:0; background:rgba(5,8,12,.8); display:none; align-items:center; justify-content:center; }
#auth.shown { display:flex; }
#auth form { background:var(--panel); border:1px solid var(--line); border-radius:8px; padding:18px; width:min(420px, 92vw); flex-direction:column; }
</style>
</head>
<body>
<header>
  <h1>Fanout</h1><span id="status">connecting…</span><span id="server"></span>
</header>
<main>
  <p class="note wide" id="connect-hint">From a terminal: <code>{{nc-command}}</code>, then type <code>SUB news.*</code>; or run <code>fanout sub{{server-option}} 'news.*'</code> and <code>fanout pub{{server-option}} news.uk hello</code> (the addresses this server listens on, filled in by ConsoleConnectHint).</p>
  <section class="wide"><h2>Server</h2><div id="counters"></div></section>
  <section class="two-thirds"><h2>Messages per second, last 5 minutes</h2><canvas id="chart" width="800" height="160"></canvas></section>
  <section class="third"><h2>Subjects</h2><div class="scroll"><table><thead><tr><th>subject</th><th>subscribers</th><th>groups</th></tr></thead><tbody id="channels"></tbody></table></div><p class="note" id="channels-note"></p></section>
  <section class="half"><h2>Subscribe</h2>
    <form id="sub-form"><input id="sub-pattern" placeholder="pattern, e.g. news.>" autocomplete="off"><button id="sub-button">Subscribe</button><button type="button" class="quiet" id="sub-clear">Clear</button></form>
    <p class="note" id="sub-note">Messages of the patterns you subscribe to appear here as they arrive.</p>
    <div class="scroll"><ol id="messages"></ol></div>
  </section>
  <section class="half"><h2>Publish</h2>
    <form id="pub-form"><input id="pub-subject" placeholder="subject" autocomplete="off"><input id="pub-payload" placeholder="payload" autocomplete="off"><button id="pub-button">Publish</button></form>
    <p class="note" id="pub-result"></p>
    <h2 style="margin-top:16px">Event stream (Server-Sent Events, resumes by itself)</h2>
    <form id="es-form"><input id="es-subject" placeholder="subject or pattern" autocomplete="off"><button id="es-open">Open</button></form>
    <p class="note" id="es-note"></p>
    <div class="scroll"><ol id="es-log"></ol></div>
  </section>
  <section class="wide"><h2>Ask</h2>
    <form id="ask-form"><input id="ask-subject" placeholder="subject" autocomplete="off"><input id="ask-payload" placeholder="question" autocomplete="off"><input id="ask-timeout" value="2000" size="6" title="timeout in ms" autocomplete="off"><button id="ask-button">Ask</button></form>
    <p class="note" id="ask-note">Puts a question to every receiver of the subject (one member of each group); answers appear as they arrive.</p>
    <div class="scroll"><ol id="ask-log"></ol></div>
  </section>
  <section class="wide"><h2>Clients</h2><div class="scroll"><table><thead><tr><th>id</th><th>address</th><th>transport</th><th>subscriptions</th><th>pending bytes</th><th>age</th></tr></thead><tbody id="clients"></tbody></table></div><p class="note" id="clients-note"></p></section>
</main>
<div id="auth"><form id="auth-form"><h2>This server needs a token</h2><input id="auth-token" type="password" placeholder="token" autocomplete="off"><p class="note error" id="auth-error"></p><button>Sign in</button></form></div>
\#(ConsoleClientScript.text)<script>
"use strict";
// The protocol is spoken by the Fanout client above (clients/js, its one-file browser build): reconnects,
// resumes concrete subjects with no duplicate, and reports what was missed; this script only draws.
const $ = (id) => document.getElementById(id);
const maxRows = 500;
let client = null, history = [], lastPublished = null, timer = null, groupsByPattern = new Map();
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
}

async function start() {
  const url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws";
  try {
    client = await Fanout.connect(url, { token: token || undefined, onEvent, reconnect: { initial: 500, maximum: 5000 }, logger: { info() {}, warn() {} } });
  } catch (error) {
    if (error instanceof Fanout.Denied) { token = ""; sessionStorage.removeItem("fanout-token"); $("auth-error").textContent = failure(error); $("auth").className = "shown"; return; }
    setStatus("disconnected, reconnecting…", "down"); setTimeout(start, 1000); return;
  }
  const greeting = client.greeting;
  $("server").textContent = `fanout/1 ${greeting.serverName} auth=${greeting.authRequired ? "required" : "none"}${greeting.epoch ? " epoch=" + greeting.epoch : ""}`;
  if (greeting.authRequired && !token) { await client.close(); client = null; $("auth").className = "shown"; $("auth-token").focus(); return; }
  $("auth").className = ""; setStatus("connected", "up");
  for (const pattern of [...subscriptions.keys()]) follow(pattern);
  poll(); timer = setInterval(poll, 1000);
}

$("auth-form").onsubmit = (event) => { event.preventDefault(); token = $("auth-token").value.trim(); if (!token) return;
  sessionStorage.setItem("fanout-token", token); $("auth-error").textContent = ""; start(); };

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
    return `<tr><td>${esc(f.id)}</td><td>${esc(f.addr)}</td><td>${esc(f.transport || "")}</td><td>${esc(f.subs)}</td><td>${esc(f.pending)}</td><td>${esc(f.age_s)} s</td></tr>`; }).join("");
}

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
</script>
</body>
</html>
"""#
}
