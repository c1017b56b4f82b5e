// Berth's capacity view: reads /dashboard/api/* with the token the login gave, and asks the
// Compute API's what-if extension. Plain JavaScript, no build step; every value is put in the
// page as text (never as HTML).
"use strict";

const TOKEN_KEY = "berth-dashboard-token";
const state = { config: null, query: { page: 1 }, pages: 1, host: null, images: [],
                hostsLoad: 0, serversLoad: 0 };

const $ = (selector) => document.querySelector(selector);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key.startsWith("data-")) node.setAttribute(key, value);
    else node[key] = value;
  }
  for (const child of children) {
    if (child !== null && child !== undefined) {
      node.append(child instanceof Node ? child : String(child));
    }
  }
  return node;
}

// -- talking to Berth ----------------------------------------------------------------------------

class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

async function call(path, options = {}) {
  const headers = { Accept: "application/json", ...(options.headers || {}) };
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers["X-Auth-Token"] = token;
  const response = await fetch(path, { ...options, headers });
  const text = await response.text();
  let body = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch (_) {
    body = null;
  }
  if (!response.ok) {
    throw new ApiError(response.status, errorMessage(response, body, text));
  }
  return body;
}

function errorMessage(response, body, text) {
  // Berth's APIs answer {"error": {...}}, {"badRequest": {...}}, {"errors": [...]} or
  // {"NeutronError": {...}}: take the first message found.
  if (body && typeof body === "object") {
    for (const value of Object.values(body)) {
      if (value && typeof value === "object") {
        const first = Array.isArray(value) ? value[0] || {} : value;
        const message = first.message || first.detail || first.title;
        if (message) return `${response.status}: ${message}`;
      }
    }
  }
  return `${response.status} ${response.statusText}: ${text.slice(0, 300)}`;
}

function showError(where, error) {
  const node = $(where);
  node.textContent = error ? String(error.message || error) : "";
  if (error && error.status === 401) {
    sessionStorage.removeItem(TOKEN_KEY);
    showLogin("Your token was refused or has expired; log in again.");
  }
}

// -- logging in ------------------------------------------------------------------------------------

// What one login read is not shown to the next.
function clearData() {
  for (const selector of ["#hosts tbody", "#servers tbody", "#decisions", "#totals",
    "#what-if-summary"]) {
    $(selector).replaceChildren();
  }
  $("#page-info").textContent = "";
  $("#host-servers").hidden = true;
  $("#what-if-answer").hidden = true;
  for (const selector of ["#error", "#what-if-error"]) $(selector).textContent = "";
}

function showLogin(hint) {
  clearData();
  const keystone = state.config.auth === "keystone";
  $("#login").hidden = false;
  $("#main").hidden = true;
  $("#logout").hidden = true;
  $("#who").textContent = "";
  $("#login-hint").textContent = hint || (keystone
    ? "Log in with a Keystone user; the capacity view shows the fleet to admins."
    : "Berth runs with noauth2: give a token such as admin (an admin) or user:project.");
  for (const label of document.querySelectorAll("#login-form label")) {
    label.hidden = label.dataset.for !== state.config.auth;
  }
}

async function logIn(event) {
  event.preventDefault();
  const form = event.target;
  showError("#login-error", null);
  try {
    let token = form.token.value.trim();
    if (state.config.auth === "keystone") token = await keystoneToken(form);
    sessionStorage.setItem(TOKEN_KEY, token);
    sessionStorage.setItem(TOKEN_KEY + "-who", state.config.auth === "keystone"
      ? `${form.user.value} (${form.project.value})` : token);
    await start();
  } catch (error) {
    showError("#login-error", error);
  }
}

async function keystoneToken(form) {
  const domain = { name: "Default" };
  const body = {
    auth: {
      identity: {
        methods: ["password"],
        password: { user: { name: form.user.value, domain, password: form.password.value } },
      },
      scope: { project: { name: form.project.value, domain } },
    },
  };
  const response = await fetch(`${state.config.identity}/auth/tokens`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  if (!response.ok) {
    const text = await response.text();
    let parsed = null;
    try { parsed = JSON.parse(text); } catch (_) { parsed = null; }
    throw new ApiError(response.status, "Keystone refused: " + errorMessage(response, parsed, text));
  }
  return response.headers.get("X-Subject-Token");
}

function logOut() {
  sessionStorage.removeItem(TOKEN_KEY);
  sessionStorage.removeItem(TOKEN_KEY + "-who");
  showLogin();
}

// -- numbers ---------------------------------------------------------------------------------------

const UNITS = {
  VCPU: [""],
  MEMORY_MB: [" MiB"],
  DISK_GB: [" GiB"],
};

// The fleet's (or the filtered hosts') sums, in this order.
const TOTALS = {
  VCPU: "VCPU",
  MEMORY_MB: "Memory",
  DISK_GB: "Disk",
  NET_BW_EGR_KILOBIT_PER_SEC: "Egress bandwidth",
  NET_BW_IGR_KILOBIT_PER_SEC: "Ingress bandwidth",
  NET_PACKET_RATE_KILOPACKET_PER_SEC: "Packet rate (either way)",
  NET_PACKET_RATE_EGR_KILOPACKET_PER_SEC: "Packet rate (egress)",
  NET_PACKET_RATE_IGR_KILOPACKET_PER_SEC: "Packet rate (ingress)",
};

const PACKET_DIRECTIONS = {
  NET_PACKET_RATE_KILOPACKET_PER_SEC: "either way",
  NET_PACKET_RATE_EGR_KILOPACKET_PER_SEC: "egress",
  NET_PACKET_RATE_IGR_KILOPACKET_PER_SEC: "ingress",
};

function number(value) {
  return Number(value).toLocaleString("en-US");
}

function bandwidth(kbps) {
  if (kbps >= 1e6) return `${+(kbps / 1e6).toFixed(2)} Gbit/s`;
  if (kbps >= 1e3) return `${+(kbps / 1e3).toFixed(2)} Mbit/s`;
  return `${kbps} kbit/s`;
}

function amountText(rc, amount) {
  if (rc.startsWith("NET_BW_")) return `${bandwidth(amount.used)} / ${bandwidth(amount.capacity)}`;
  if (rc.startsWith("NET_PACKET_RATE")) return `${number(amount.used)} / ${number(amount.capacity)} kpps`;
  const unit = (UNITS[rc] || [""])[0];
  return `${number(amount.used)} / ${number(amount.capacity)}${unit}`;
}

// A used-versus-capacity figure with its bar; the exact numbers are in data attributes too.
function gauge(rc, amount, label) {
  if (!amount) return el("span", { class: "none" }, "–");
  const share = amount.capacity ? amount.used / amount.capacity : 0;
  const level = share >= 0.9 ? "full" : share >= 0.7 ? "high" : "ok";
  const bar = el("span", { class: "bar" }, el("span", { class: `fill ${level}` }));
  bar.firstChild.style.width = `${Math.min(100, share * 100).toFixed(1)}%`;
  return el("span", {
    class: "gauge", "data-rc": rc, "data-used": amount.used, "data-capacity": amount.capacity,
    title: `${rc}: ${number(amount.used)} used of ${number(amount.capacity)}`,
  }, label ? el("span", { class: "label" }, label) : null,
     el("span", { class: "amount" }, amountText(rc, amount)), bar);
}

// -- the hosts -------------------------------------------------------------------------------------

async function loadHosts() {
  // Each load is numbered: an answer that comes back after a later load's (filters changed
  // quickly) is dropped, so the table always shows the filters last chosen.
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(state.query)) {
    if (value !== "" && value !== undefined && value !== null) params.set(key, value);
  }
  const load = ++state.hostsLoad;
  try {
    const page = await call(`api/hosts?${params}`);
    if (load !== state.hostsLoad) return;
    showError("#error", null);
    renderHosts(page);
  } catch (error) {
    if (load !== state.hostsLoad) return;
    $("#hosts tbody").replaceChildren();
    showError("#error", error);
  }
}

function fillSelect(select, values) {
  const chosen = select.value;
  const first = select.options[0];
  select.replaceChildren(first, ...values.map((v) => el("option", { value: v }, v)));
  select.value = values.includes(chosen) ? chosen : "";
}

function renderHosts(page) {
  const filters = $("#filters");
  fillSelect(filters.cell, page.cells);
  fillSelect(filters.aggregate, page.aggregates);
  fillSelect(filters.physnet, page.physnets);
  state.pages = page.pages;
  $("#page-info").textContent =
    `page ${page.page} of ${page.pages} · ${number(page.total)} host${page.total === 1 ? "" : "s"}`;
  $("#prev").disabled = page.page <= 1;
  $("#next").disabled = page.page >= page.pages;
  const totals = $("#totals");
  const shown = Object.keys(TOTALS).filter((rc) => page.totals[rc]);
  totals.replaceChildren(...shown.map((rc) => gauge(rc, page.totals[rc], TOTALS[rc])));
  const body = $("#hosts tbody");
  body.replaceChildren(...page.hosts.map(hostRow));
  if (!page.hosts.length) {
    body.append(el("tr", {}, el("td", { colSpan: 10, class: "none" }, "No host matches.")));
  }
}

function hostRow(host) {
  const state_ = [host.up ? "up" : "down", host.enabled ? "enabled" : "disabled"].join(", ");
  const devices = el("ul", { class: "devices" }, ...host.devices.map((d) => el("li",
    { "data-device": d.name },
    el("div", { class: "device" }, d.name, " ",
      d.physnets.length ? el("span", { class: "physnet" }, d.physnets.join(", ")) : null),
    gauge("NET_BW_EGR_KILOBIT_PER_SEC", d.egress, "egress"),
    gauge("NET_BW_IGR_KILOBIT_PER_SEC", d.ingress, "ingress"))));
  const packets = el("div", {}, ...Object.entries(host.packet_rate).map(
    ([rc, amount]) => gauge(rc, amount, PACKET_DIRECTIONS[rc] || rc)));
  const name = el("button", { type: "button", class: "link", title: "Show its servers" }, host.host);
  name.addEventListener("click", () => loadServers(host.host));
  return el("tr", { "data-host": host.host },
    el("td", { class: "host" }, name,
      host.node !== host.host ? el("div", { class: "node" }, host.node) : null),
    el("td", {}, host.cell),
    el("td", {}, host.aggregates.join(", ") || "–", el("div", { class: "node" }, `zone ${host.zone}`)),
    el("td", { class: host.up && host.enabled ? "" : "warn" }, state_),
    el("td", { class: "servers" }, host.servers),
    el("td", {}, gauge("VCPU", host.compute.VCPU)),
    el("td", {}, gauge("MEMORY_MB", host.compute.MEMORY_MB)),
    el("td", {}, gauge("DISK_GB", host.compute.DISK_GB)),
    el("td", {}, host.devices.length ? devices : el("span", { class: "none" }, "–")),
    el("td", {}, packets));
}

async function loadServers(host) {
  const load = ++state.serversLoad;  // the host clicked last wins, as in loadHosts
  try {
    const answer = await call(`api/hosts/${encodeURIComponent(host)}/servers`);
    if (load !== state.serversLoad) return;
    $("#servers-host").textContent = answer.host;
    const rows = answer.servers.map((s) => el("tr", { "data-server": s.id },
      el("td", {}, s.name), el("td", { class: "id" }, s.id), el("td", {}, s.status),
      el("td", {}, `${s.flavor.name} (${s.flavor.vcpus} VCPU, ${number(s.flavor.ram)} MiB, ${s.flavor.disk} GiB)`),
      el("td", { class: "id" }, s.project_id), el("td", {}, s.created)));
    if (!rows.length) rows.push(el("tr", {}, el("td", { colSpan: 6, class: "none" }, "No server.")));
    $("#servers tbody").replaceChildren(...rows);
    $("#host-servers").hidden = false;
    $("#host-servers").scrollIntoView({ block: "nearest" });
  } catch (error) {
    showError("#error", error);
  }
}

// -- scheduling decisions --------------------------------------------------------------------------

async function loadDecisions() {
  try {
    const answer = await call("api/decisions?limit=20");
    const items = answer.decisions.map(decision);
    if (!items.length) items.push(el("li", { class: "none" }, "No server has been scheduled yet."));
    $("#decisions").replaceChildren(...items);
  } catch (error) {
    $("#decisions").replaceChildren(el("li", { class: "error" }, error.message));
  }
}

function decision(d) {
  const where = d.host ? `on ${d.host} (${d.cell})` : `in ${d.cell}`;
  const head = el("div", { class: "decision-head" },
    el("span", { class: `outcome ${d.outcome.replace(" ", "-")}` }, d.outcome),
    el("strong", {}, d.name), ` ${d.status} ${where} · ${d.created}`,
    el("span", { class: "id" }, ` ${d.server_id}`));
  const item = el("li", { "data-server": d.server_id, "data-outcome": d.outcome }, head);
  if (d.explanation) item.append(explanation(d.explanation));
  else if (d.fault) item.append(el("p", { class: "fault" }, d.fault));
  return item;
}

function explanation(x) {
  const details = el("details", { class: "explanation", open: true },
    el("summary", {}, x.summary));
  if (x.groups.length) {
    details.append(el("table", {},
      el("thead", {}, el("tr", {}, el("th", {}, "request group"), el("th", {}, "met alone"),
        el("th", {}, "what was short"))),
      el("tbody", {}, ...x.groups.map((g) => el("tr", { class: g.met_alone ? "" : "short" },
        el("td", {}, g.name), el("td", {}, g.met_alone ? "yes" : "no"),
        el("td", {}, g.short.join("; ")))))));
  }
  for (const text of x.together) details.append(el("p", {}, `together: ${text}`));
  if (x.stages.length) {
    details.append(el("table", {},
      el("thead", {}, el("tr", {}, el("th", {}, "filter"), el("th", {}, "removed"),
        el("th", {}, "reasons"))),
      el("tbody", {}, ...x.stages.map((s) => el("tr", {}, el("td", {}, s.name),
        el("td", {}, s.removed),
        el("td", {}, Object.entries(s.reasons).map(([k, v]) => `${k}: ${v}`).join(", ")))))));
  }
  return details;
}

// -- what-if ---------------------------------------------------------------------------------------

function whatIfPath() {
  return `${state.config.compute}/os-berth-what-if`;
}

function whatIfBody() {
  const form = $("#what-if-form");
  const image = state.images.find((i) => i.name === form.image.value || i.id === form.image.value);
  return {
    server: {
      name: "what-if",
      flavorRef: form.flavor.value,
      imageRef: image ? image.id : form.image.value,
      networks: "none",
    },
    count: Number(form.count.value) || 1,
  };
}

function fillWhatIfBody() {
  $("#what-if-form").body.value = JSON.stringify(whatIfBody(), null, 2);
}

async function askWhatIf(event) {
  event.preventDefault();
  const answerNode = $("#what-if-answer");
  answerNode.hidden = true;
  $("#what-if-summary").replaceChildren();
  showError("#what-if-error", null);
  let body;
  try {
    body = JSON.parse($("#what-if-form").body.value);
  } catch (error) {
    showError("#what-if-error", new Error(`The request body is not JSON: ${error.message}`));
    return;
  }
  try {
    const answer = await call(whatIfPath(), {
      method: "POST",
      headers: { "Content-Type": "application/json", "OpenStack-API-Version": "compute latest" },
      body: JSON.stringify(body),
    });
    $("#what-if-summary").replaceChildren(...whatIfSummary(answer && answer.what_if));
    answerNode.textContent = JSON.stringify(answer, null, 2);
    answerNode.hidden = false;
  } catch (error) {
    const hint = error.status === 404
      ? " (this Berth has no what-if API at that path)" : "";
    showError("#what-if-error", new ApiError(error.status, `POST ${whatIfPath()}: ${error.message}${hint}`));
  }
}

// The what-if answer in sentences (the whole document is shown below them).
function whatIfSummary(w) {
  if (!w) return [];
  const lines = [el("p", { class: w.fits ? "fits" : "warn" },
    w.fits ? `Fits: ${w.count} would be placed now.` : `Does not fit: ${w.message || "no host"}`)];
  const room = w.capacity || {};
  if (room.instances !== undefined) {
    const exact = room.exact ? "" : " at least";
    const by = (m) => Object.entries(m || {}).map(([k, v]) => `${k}: ${v}`).join(", ");
    lines.push(el("p", {}, `Room for${exact} ${room.instances} more like it` +
      (room.availability_zones ? ` (by zone ${by(room.availability_zones)})` : "") +
      (room.cells ? ` (by cell ${by(room.cells)})` : "") + "."));
  }
  for (const chosen of w.instances || []) {
    const alternates = (chosen.alternates || []).map((a) => a.host).join(", ");
    lines.push(el("p", {}, `Would go to ${chosen.host} (${chosen.cell})` +
      (alternates ? `; alternates ${alternates}` : "") + "."));
  }
  return lines;
}

async function loadCatalog() {
  // The flavor and image the form names; a failure leaves the defaults.
  try {
    const flavors = await call(`${state.config.compute}/flavors`);
    const form = $("#what-if-form");
    const small = flavors.flavors.find((f) => f.name === "m1.small") || flavors.flavors[0];
    if (small) form.flavor.value = small.id;
    const images = await call(`${state.config.image}/v2/images`);
    state.images = images.images;
  } catch (_) {
    // The what-if answer says what is wrong, if anything.
  }
  fillWhatIfBody();
}

// -- starting --------------------------------------------------------------------------------------

async function start() {
  $("#login").hidden = true;
  $("#main").hidden = false;
  $("#logout").hidden = false;
  $("#who").textContent = sessionStorage.getItem(TOKEN_KEY + "-who") || "";
  $("#what-if-path").textContent = `POST ${whatIfPath()}`;
  await Promise.all([loadHosts(), loadDecisions(), loadCatalog()]);
}

function bind() {
  const filters = $("#filters");
  let typing = null;
  filters.addEventListener("input", (event) => {
    // The text box waits for a pause in typing; menus apply at once.
    clearTimeout(typing);
    const apply = () => {
      for (const key of ["cell", "aggregate", "physnet", "q", "sort", "per_page"]) {
        state.query[key] = filters[key].value;
      }
      state.query.page = 1;
      loadHosts();
    };
    if (event.target.name === "q") typing = setTimeout(apply, 250);
    else apply();
  });
  filters.addEventListener("submit", (event) => event.preventDefault());
  $("#prev").addEventListener("click", () => {
    state.query.page = Math.max(1, state.query.page - 1);
    loadHosts();
  });
  $("#next").addEventListener("click", () => {
    state.query.page = Math.min(state.pages, state.query.page + 1);
    loadHosts();
  });
  $("#refresh-decisions").addEventListener("click", loadDecisions);
  $("#login-form").addEventListener("submit", logIn);
  $("#logout").addEventListener("click", logOut);
  const whatIf = $("#what-if-form");
  for (const name of ["flavor", "image", "count"]) whatIf[name].addEventListener("change", fillWhatIfBody);
  whatIf.addEventListener("submit", askWhatIf);
}

async function main() {
  bind();
  state.config = await call("api/config");
  if (sessionStorage.getItem(TOKEN_KEY)) await start();
  else showLogin();
}

main();
