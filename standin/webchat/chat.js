// The chat page: long-polls the stand-in's chat state and renders it like Telegram: the
// customer's chat and, when the demo has one, the staff group (a forum with topics).
// Everything from the bot, the customer or staff is inserted with textContent, never as HTML.
"use strict";

const view = {
  version: "",
  toastsSeen: new Set(),
  firstState: true,
  signatures: new Map(), // message id -> what was rendered, to update edits in place
  staffTopic: null, // the topic the staff panel shows (0 is General)
  staffPicked: false, // whether the user chose it (else it follows the newest topic)
  staffRendered: "", // what the staff panel last rendered
  staffSeen: null, // the staff group's messages when last rendered, to tell what is new
};
// Narrower than this, one panel at a time behind the tabs (the CSS has the same width).
const NARROW = window.matchMedia("(max-width: 899.98px)");

const $ = (id) => document.getElementById(id);

async function api(path, body) {
  const response = await fetch(path, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  const data = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(data.description || `request failed (${response.status})`);
  return data;
}

// A toast over the customer's chat, or over the staff panel (`panel` "staff").
function toast(text, error = false, panel = "chat") {
  const el = document.createElement("div");
  el.className = error ? "toast error" : "toast";
  el.textContent = text;
  $(panel === "staff" ? "staff-toasts" : "toasts").appendChild(el);
  setTimeout(() => el.remove(), 3300);
}

const TAGS = { bold: "b", italic: "i", underline: "u", strikethrough: "s", code: "code", pre: "pre" };

// Telegram entities use UTF-16 offsets, which is what JavaScript strings index by.
// A link the bot sent (`<a href>`, a text_link entity) opens in a new tab, as Telegram
// does: the staff topic's handoff header links to the run in the console. Only http(s).
function linkTarget(entity) {
  return entity.type === "text_link" && /^https?:\/\//i.test(entity.url || "") ? entity.url : null;
}

function renderText(target, text, entities) {
  let at = 0;
  const spans = (entities || [])
    .filter((e) => TAGS[e.type] || linkTarget(e))
    .sort((a, b) => a.offset - b.offset);
  for (const entity of spans) {
    if (entity.offset < at) continue; // nested or overlapping: keep it plain
    target.appendChild(document.createTextNode(text.slice(at, entity.offset)));
    const url = linkTarget(entity);
    const el = document.createElement(url ? "a" : TAGS[entity.type]);
    if (url) {
      el.href = url;
      el.target = "_blank";
      el.rel = "noopener noreferrer";
    }
    el.textContent = text.slice(entity.offset, entity.offset + entity.length);
    target.appendChild(el);
    at = entity.offset + entity.length;
  }
  target.appendChild(document.createTextNode(text.slice(at)));
}

function timeOf(unix) {
  return new Date(unix * 1000).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
}

// `pressPath` is where this panel's button presses go; staff messages name their sender.
function renderMessage(el, message, pressPath = "/api/press") {
  el.replaceChildren();
  const mine = message.mine ?? !message.from_bot;
  el.className = `msg ${mine ? "mine" : "theirs"}`;
  const bubble = document.createElement("div");
  bubble.className = "bubble";
  if (message.sender && !mine) {
    const sender = document.createElement("div");
    sender.className = "sender";
    sender.textContent = message.sender;
    bubble.appendChild(sender);
  }
  const text = message.text ?? `[${message.kind}]`;
  renderText(bubble, text, message.entities);
  const meta = document.createElement("span");
  meta.className = "meta";
  meta.textContent = (message.edited ? "edited " : "") + timeOf(message.date);
  bubble.appendChild(meta);
  el.appendChild(bubble);
  const rows = (message.buttons || []).filter((row) => row.length);
  if (rows.length) {
    const keyboard = document.createElement("div");
    keyboard.className = "keyboard";
    for (const row of rows) {
      const rowEl = document.createElement("div");
      rowEl.className = "row";
      for (const button of row) {
        const b = document.createElement("button");
        b.type = "button";
        b.textContent = button.text;
        b.addEventListener("click", () => press(message.id, button, keyboard, pressPath));
        rowEl.appendChild(b);
      }
      keyboard.appendChild(rowEl);
    }
    el.appendChild(keyboard);
  }
}

async function press(messageId, button, keyboard, path) {
  if (!button.callback_data) {
    if (button.url) window.open(button.url, "_blank", "noopener");
    return;
  }
  keyboard.querySelectorAll("button").forEach((b) => (b.disabled = true));
  try {
    await api(path, { message_id: messageId, callback_data: button.callback_data });
  } catch (error) {
    toast(error.message, true, path === "/api/staff/press" ? "staff" : "chat");
    keyboard.querySelectorAll("button").forEach((b) => (b.disabled = false));
  }
}

function render(state) {
  const list = $("messages");
  const nearBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 80;
  const seen = new Set();
  for (const message of state.messages) {
    seen.add(String(message.id));
    const signature = JSON.stringify(message);
    let el = list.querySelector(`[data-id="${message.id}"]`);
    if (el && view.signatures.get(message.id) === signature) continue;
    const changed = Boolean(el);
    if (!el) {
      el = document.createElement("div");
      el.dataset.id = String(message.id);
      list.insertBefore(el, $("typing"));
    }
    renderMessage(el, message);
    view.signatures.set(message.id, signature);
    if (!view.firstState) notify("chat");
    if (changed) {
      el.classList.add("flash"); // an edit in place: show that this message changed
      setTimeout(() => el.classList.remove("flash"), 1300);
    }
  }
  list.querySelectorAll("[data-id]").forEach((el) => {
    if (!seen.has(el.dataset.id)) el.remove();
  });
  $("typing").hidden = !state.typing;
  for (const t of state.toasts) {
    if (view.toastsSeen.has(t.id)) continue;
    view.toastsSeen.add(t.id);
    if (!view.firstState) toast(t.text, false, t.panel);
  }
  view.firstState = false;
  if (nearBottom) list.scrollTop = list.scrollHeight;
  if (state.staff) renderStaff(state.staff);
}

function renderStaff(staff) {
  const topics = staff.topics;
  const newest = topics.length ? topics[topics.length - 1].id : 0;
  if (!view.staffPicked || !topics.some((t) => t.id === view.staffTopic)) {
    view.staffTopic = newest;
    view.staffPicked = false;
  }
  const signature = JSON.stringify([view.staffTopic, staff]);
  if (signature === view.staffRendered) return;
  view.staffRendered = signature;
  const messages = JSON.stringify(staff.messages);
  if (view.staffSeen !== null && messages !== view.staffSeen) notify("staff");
  view.staffSeen = messages;

  const nav = $("topics");
  nav.replaceChildren();
  for (const topic of topics) {
    const b = document.createElement("button");
    b.type = "button";
    b.dataset.topic = String(topic.id);
    b.textContent = topic.closed ? `🔒 ${topic.name}` : topic.name;
    b.classList.toggle("selected", topic.id === view.staffTopic);
    b.classList.toggle("closed", topic.closed);
    b.addEventListener("click", () => {
      view.staffTopic = topic.id;
      view.staffPicked = true;
      renderStaff(staff);
    });
    nav.appendChild(b);
  }
  const current = topics.find((t) => t.id === view.staffTopic);
  $("topic-title").textContent = current ? current.name + (current.closed ? " (closed)" : "") : "General";

  const list = $("staff-messages");
  const nearBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 80;
  list.replaceChildren();
  for (const message of staff.messages) {
    if (message.topic !== view.staffTopic) continue;
    const el = document.createElement("div");
    el.dataset.id = String(message.id);
    if (message.service) {
      el.className = "service";
      el.textContent = message.service;
    } else {
      renderMessage(el, message, "/api/staff/press");
    }
    list.appendChild(el);
  }
  if (nearBottom) list.scrollTop = list.scrollHeight;
}

async function sendStaff() {
  const value = $("staff-text").value.trim();
  if (!value) return;
  try {
    await api("/api/staff/send", { topic: view.staffTopic ?? 0, text: value });
    $("staff-text").value = "";
  } catch (error) {
    toast(error.message, true, "staff");
  }
}

// ----- the tabs: one panel at a time on a narrow screen ----------------------------------

function showTab(panel) {
  $("layout").dataset.tab = panel;
  for (const tab of $("tabs").querySelectorAll("[role=tab]")) {
    const selected = tab.dataset.panel === panel;
    tab.setAttribute("aria-selected", String(selected));
    tab.tabIndex = selected ? 0 : -1;
  }
  $(`badge-${panel}`).hidden = true;
  const list = $(panel === "staff" ? "staff-messages" : "messages");
  list.scrollTop = list.scrollHeight; // the newest message, as a chat opens
}

// Something changed in `panel`: if the tabs hide it, its tab shows a dot until opened.
function notify(panel) {
  if (NARROW.matches && $("layout").dataset.tab !== panel) $(`badge-${panel}`).hidden = false;
}

function startTabs() {
  const tabs = [...$("tabs").querySelectorAll("[role=tab]")];
  $("tabs").hidden = false;
  for (const tab of tabs) {
    tab.addEventListener("click", () => showTab(tab.dataset.panel));
    tab.addEventListener("keydown", (event) => {
      if (event.key !== "ArrowLeft" && event.key !== "ArrowRight") return;
      const next = tabs[(tabs.indexOf(tab) + 1) % tabs.length]; // two tabs: either key flips
      showTab(next.dataset.panel);
      next.focus();
    });
  }
  // Wide again: both panels show, so no tab has anything unseen.
  NARROW.addEventListener("change", () => {
    if (!NARROW.matches) tabs.forEach((tab) => ($(`badge-${tab.dataset.panel}`).hidden = true));
  });
}

function startStaff(staff) {
  $("staff").hidden = false;
  startTabs();
  $("staff-title").textContent = staff.title;
  $("staff-name").textContent = staff.name;
  $("staff-id").textContent = String(staff.user_id);
  $("staff-text").maxLength = view.maxText;
  $("staff-composer").addEventListener("submit", (event) => {
    event.preventDefault();
    sendStaff();
  });
  $("staff-text").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      sendStaff();
    }
  });
}

async function poll() {
  for (;;) {
    try {
      const wait = view.version ? 25 : 0;
      const response = await fetch(`/api/state?since=${encodeURIComponent(view.version)}&wait=${wait}`);
      if (!response.ok) throw new Error(String(response.status));
      const state = await response.json();
      view.version = state.version;
      render(state);
    } catch (error) {
      $("bot-status").textContent = "reconnecting…";
      await new Promise((resolve) => setTimeout(resolve, 1000));
      continue;
    }
    $("bot-status").textContent = "bot";
  }
}

async function send(text) {
  const value = text.trim();
  if (!value) return;
  try {
    await api("/api/send", { text: value });
    $("text").value = "";
  } catch (error) {
    toast(error.message, true);
  }
}

async function start() {
  const typing = document.createElement("div");
  typing.id = "typing";
  typing.className = "typing";
  typing.hidden = true;
  typing.textContent = "bot is typing…";
  $("messages").appendChild(typing);

  const config = await (await fetch("/api/config")).json();
  $("bot-name").textContent = config.bot_name;
  $("user-id").textContent = String(config.user_id);
  $("text").maxLength = config.max_text;
  view.maxText = config.max_text;
  if (config.staff) startStaff(config.staff);
  if (config.console_url) {
    const link = $("console-link");
    link.href = config.console_url;
    link.hidden = false;
  }
  for (const suggestion of config.suggestions) {
    const chip = document.createElement("button");
    chip.type = "button";
    chip.textContent = suggestion;
    chip.addEventListener("click", () => send(suggestion));
    $("suggestions").appendChild(chip);
  }
  $("composer").addEventListener("submit", (event) => {
    event.preventDefault();
    send($("text").value);
  });
  $("text").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      send($("text").value);
    }
  });
  poll();
}

document.addEventListener("DOMContentLoaded", start);
