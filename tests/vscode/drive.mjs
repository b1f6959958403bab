// Drives a real VS Code (code-server in headless Chromium, over the Chrome
// DevTools Protocol) with the packaged extension installed, as a person
// would, and writes what the page showed as JSON (tests/it/vscode.rs reads
// it), with a screenshot of each step.
//   node drive.mjs CDP_URL CODE_SERVER_URL WORKSPACE OUT_DIR [MODE]
// MODE `missing`: the binary is not where the settings say; only the
// message saying so is read.
// Needs Node.js 22 or later (fetch and WebSocket built in).
import { writeFileSync } from "node:fs";

const [cdp, server, workspace, out, mode] = process.argv.slice(2);
const seen = {};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const tab = await (await fetch(`${cdp}/json/new?about:blank`, { method: "PUT" })).json();
const ws = new WebSocket(tab.webSocketDebuggerUrl);
await new Promise((r) => ws.addEventListener("open", r, { once: true }));
let next = 0;
const waiting = new Map();
ws.addEventListener("message", (e) => {
  const m = JSON.parse(e.data);
  if (m.id && waiting.has(m.id)) {
    waiting.get(m.id)(m);
    waiting.delete(m.id);
  }
});
const send = (method, params = {}) =>
  new Promise((r) => {
    const id = ++next;
    waiting.set(id, r);
    ws.send(JSON.stringify({ id, method, params }));
  });
const evaluate = async (expression) =>
  (await send("Runtime.evaluate", { expression, returnByValue: true, awaitPromise: true })).result?.result?.value;
// The value of `expression` once it is truthy. `again`, if given, is done
// once more every few seconds while it is not: a key that opens a widget
// can be lost on a busy machine (pressed while the editor was still taking
// the click's focus), and pressing it again is what a person would do.
const until = async (what, expression, ms = 30000, again = null) => {
  const started = Date.now();
  let last = started;
  while (Date.now() - started < ms) {
    const value = await evaluate(expression);
    if (value) return value;
    if (again && Date.now() - last > 3000) {
      await again();
      last = Date.now();
    }
    await sleep(150);
  }
  throw new Error(`timed out waiting for ${what}`);
};
const shoot = async (name) => {
  const shot = await send("Page.captureScreenshot", { format: "png" });
  writeFileSync(`${out}/${name}.png`, Buffer.from(shot.result.data, "base64"));
};
const mouse = async (type, x, y) => send("Input.dispatchMouseEvent", { type, x, y, button: type === "mouseMoved" ? "none" : "left", clickCount: 1 });
const click = async ({ x, y }) => {
  await mouse("mousePressed", x, y);
  await mouse("mouseReleased", x, y);
};
// Where an element is: its centre, or the centre of the text `text` in the
// editor's rendered lines.
const centre = (what, selector) =>
  until(what, `(() => { const e = document.querySelector(${JSON.stringify(selector)}); if (!e) return null; const b = e.getBoundingClientRect(); return b.width ? {x: b.x + b.width / 2, y: b.y + b.height / 2} : null; })()`);
const token = (text) =>
  until(`the token ${text}`, `(() => { for (const s of document.querySelectorAll('.view-line span > span')) { if (s.textContent === ${JSON.stringify(text)}) { const b = s.getBoundingClientRect(); return {x: b.x + b.width / 2, y: b.y + b.height / 2, left: b.x, right: b.x + b.width, className: s.className}; } } return null; })()`);
const keys = {
  Enter: [13, "Enter", "\r"], Escape: [27, "Escape"], End: [35, "End"], " ": [32, "Space", " "],
  ".": [190, "Period"], p: [80, "KeyP"], s: [83, "KeyS"], F1: [112, "F1"], F5: [116, "F5"],
  F9: [120, "F9"],
};
const press = async (key, modifiers = 0) => {
  const [code, name, text] = keys[key];
  const base = { key, code: name, modifiers, windowsVirtualKeyCode: code };
  await send("Input.dispatchKeyEvent", { type: "keyDown", ...base, text: modifiers ? undefined : text });
  await send("Input.dispatchKeyEvent", { type: "keyUp", ...base });
};
const CTRL = 2;
const open = async (name) => {
  await click(await centre(`${name} in the explorer`, `.monaco-list-row[aria-label*="${name}"]`));
  await until(`${name} open`, `[...document.querySelectorAll('.tab.active')].some(t => t.textContent.includes(${JSON.stringify(name)}))`);
};
const tokens = () =>
  evaluate(`[...document.querySelectorAll('.view-line')].map(l => [...l.querySelectorAll('span > span')].map(s => [s.textContent, s.className]))`);

// The binary is not where the settings say: the message naming it and
// the setting to change.
const missingBinary = async () => {
  seen.missing = await until("the missing binary's message", `(() => { const n = [...document.querySelectorAll('.notification-list-item-message')].map(n => n.textContent).find(t => t.includes('cannot run')); return n || null; })()`);
  await shoot("missing-binary");
};

// With the server running: diagnostics, hover, quick fix, completion, the
// Composition's colours and the extension's commands.
const everything = async () => {
  await until("the diagnostics", "document.querySelectorAll('.squiggly-error').length > 0", 30000);
  seen.star_tokens = await tokens();
  const keyword = await token("depnds_on");
  seen.squiggles = await evaluate(`[...document.querySelectorAll('.squiggly-error')].map(s => { const b = s.getBoundingClientRect(); return {left: b.x, right: b.x + b.width, y: b.y + b.height / 2}; })`);
  seen.keyword = keyword;
  await shoot("1-highlighting-and-diagnostic");

  // Hover on Resource.
  const resource = await token("Resource");
  await mouse("mouseMoved", resource.x, resource.y);
  seen.hover = await until("the hover", `(() => { const h = document.querySelector('.monaco-hover:not(.hidden) .hover-contents, .monaco-hover-content'); return h && h.textContent.length > 20 ? h.textContent : null; })()`);
  await shoot("2-hover");
  await mouse("mouseMoved", 5, 5);

  // The quick fix on the keyword, applied.
  await click(keyword);
  await sleep(300);
  await press(".", CTRL);
  seen.fixes = await until("the quick fixes", `(() => { const rows = [...document.querySelectorAll('.action-widget .monaco-list-row, .action-widget .action-label')].map(r => r.textContent); return rows.length ? rows : null; })()`, 30000, () => press(".", CTRL));
  await shoot("3-quick-fix");
  await press("Enter");
  seen.fixed_line = await until("the fixed line", `(() => { const l = [...document.querySelectorAll('.view-line')].map(l => l.textContent.replace(/\u00a0/g, ' ')).find(t => t.includes('depends_on')); return l || null; })()`);
  await until("the diagnostic cleared", "document.querySelectorAll('.squiggly-error').length === 0", 30000);

  // Completion at the end of the file.
  const last = await evaluate(`(() => { const ls = [...document.querySelectorAll('.view-line')]; const b = ls[ls.length - 1].getBoundingClientRect(); return {x: b.x + 5, y: b.y + b.height / 2}; })()`);
  await click(last);
  await press("End");
  await send("Input.insertText", { text: "Reso" });
  await press(" ", CTRL);
  seen.completion = await until("the suggestions", `(() => { const rows = [...document.querySelectorAll('.suggest-widget .monaco-list-row')].map(r => r.textContent); return rows.length ? rows : null; })()`, 30000, () => press(" ", CTRL));
  await shoot("4-completion");
  await press("Escape");

  // Format on save: an unformatted script saved (Ctrl+S) is laid out as
  // `function-starlark fmt` lays it out.
  await open("fmt.star");
  await click(await token("x"));
  await press("s", CTRL);
  seen.formatted = await until("the formatted script", `(() => { const t = [...document.querySelectorAll('.view-line')].map(l => l.textContent.replace(/\u00a0/g, ' ')); return t.includes('x = 1') ? t : null; })()`);
  await until("the save", `!document.querySelector('.tab.active.dirty')`);
  await shoot("10-format-on-save");

  // A Composition: its inline source coloured as Starlark.
  await open("composition.yaml");
  await token("Resource");
  seen.yaml_tokens = await tokens();
  // Whatever the server answered, nothing it sent was refused.
  await sleep(1500);
  seen.notifications = await evaluate(`[...document.querySelectorAll('.notification-list-item-message')].map(n => n.textContent)`);
  await shoot("5-composition");

  // The extension's commands, from the command palette.
  const command = async (title) => {
    await press("F1");
    await until("the command palette", "!!document.querySelector('.quick-input-widget:not([style*=\"display: none\"]) input')", 30000, () => press("F1"));
    await send("Input.insertText", { text: title });
    await sleep(500);
    await press("Enter");
  };
  // Render the Composition with the XR beside it: the output opens beside.
  await command("function-starlark: Render this Composition");
  seen.rendered = await until("the rendered output", `(() => { const t = [...document.querySelectorAll('.view-line')].map(l => l.textContent.replace(/\u00a0/g, ' ')).join(' | '); return t.includes('kind: Bucket') && t.includes('kind: XBucket') ? t : null; })()`);
  await shoot("6-render");
  // Run the tests of a test file: the verdict in a notification.
  await open("lib_test.star");
  await command("function-starlark: Run function-starlark test");
  seen.tested = await until("the test verdict", `(() => { const n = [...document.querySelectorAll('.notification-list-item-message')].map(n => n.textContent).find(t => t.startsWith('function-starlark test:')); return n || null; })()`);
  await shoot("7-test");

  // The debugger: a breakpoint on the Composition's Resource line (F9),
  // the launch in .vscode/launch.json started (F5), stopped there with
  // oxr in the Variables view; continued, the render's end in the Debug
  // Console (it shows the last lines).
  await open("composition.yaml");
  await click(await token("Resource"));
  await press("F9");
  await until("the breakpoint", "!!document.querySelector('.codicon-debug-breakpoint')");
  await press("F5");
  seen.call_stack = await until("the call stack", `(() => { const rows = [...document.querySelectorAll('.debug-call-stack .monaco-list-row')].map(r => r.textContent); return rows.some(r => r.includes('composition.yaml')) ? rows : null; })()`, 60000);
  // The frame's scopes: Locals opened, as a person would.
  await click(await until("the Locals scope", `(() => { const r = [...document.querySelectorAll('.debug-variables .monaco-list-row')].find(r => r.textContent.trim() === 'Locals'); if (!r) return null; const b = r.getBoundingClientRect(); return {x: b.x + 30, y: b.y + b.height / 2}; })()`));
  seen.variables = await until("oxr in the Variables view", `(() => { const rows = [...document.querySelectorAll('.debug-variables .monaco-list-row')].map(r => r.textContent); return rows.some(r => r.startsWith('oxr')) ? rows : null; })()`);
  seen.stopped_line = await evaluate(`(() => { const o = document.querySelector('.debug-top-stack-frame-line'); if (!o) return null; const y = o.getBoundingClientRect().y; const l = [...document.querySelectorAll('.view-line')].find(l => Math.abs(l.getBoundingClientRect().y - y) < 3); return l ? l.textContent.replace(/\u00a0/g, ' ') : null; })()`);
  await shoot("8-breakpoint");
  await press("F5");
  seen.debug_console = await until("the render in the Debug Console", `(() => { const r = document.querySelector('.repl'); return r && r.textContent.includes('kind: XBucket') ? r.textContent : null; })()`, 60000);
  await shoot("9-debug-console");
};

try {
  await send("Page.enable");
  await send("Runtime.enable");
  await send("Emulation.setFocusEmulationEnabled", { enabled: true });
  await send("Page.navigate", { url: `${server}/?folder=${workspace}` });
  await until("the workbench", "!!document.querySelector('.monaco-workbench')", 60000);

  // A script: its tokens coloured, the unknown keyword underlined where it
  // is written.
  await open("main.star");
  await (mode === "missing" ? missingBinary() : everything());
} catch (e) {
  seen.error = String(e && e.stack || e);
  await shoot("failure").catch(() => {});
}
writeFileSync(`${out}/seen.json`, JSON.stringify(seen, null, 1));
ws.close();
process.exit(0);
