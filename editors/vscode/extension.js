// Starts `function-starlark lsp` for .star files and YAML files (the
// server answers for Compositions' inline scripts and ignores other YAML),
// shows its stderr in an output channel, says clearly when the binary is
// missing, and adds commands to restart the server, render the open
// Composition with the XR beside it, and run `function-starlark test` on
// the open file. It formats Starlark on save (the server's formatting, as
// `function-starlark fmt`), and the `function-starlark` debug type runs
// `function-starlark dap`: a render that stops at breakpoints.
const vscode = require("vscode");
const { execFile } = require("child_process");
const path = require("path");
const fs = require("fs");
const { LanguageClient } = require("vscode-languageclient/node");

let client;
let output;

function settings() {
  const config = vscode.workspace.getConfiguration("function-starlark");
  return {
    command: config.get("path") || "function-starlark",
    crds: config.get("crds"),
    formatOnSave: config.get("formatOnSave", true),
  };
}

// Before a Starlark file or a Composition is saved: the server's formatting
// edits, applied as part of the save.
function formatOnSave(event) {
  const doc = event.document;
  const starlark = doc.languageId === "starlark";
  const composition = /\.ya?ml$/.test(doc.fileName) && doc.getText().includes("StarlarkInput");
  if (!client || !settings().formatOnSave || !(starlark || composition)) {
    return;
  }
  const request = client
    .sendRequest("textDocument/formatting", {
      textDocument: { uri: doc.uri.toString() },
      options: { tabSize: 4, insertSpaces: true },
    })
    .then((edits) => client.protocol2CodeConverter.asTextEdits(edits || []))
    .catch(() => []);
  event.waitUntil(request);
}

// Runs the binary with `args` in `cwd`; resolves with its exit code and output.
function run(args, cwd) {
  const { command } = settings();
  return new Promise((resolve) => {
    execFile(command, args, { cwd, maxBuffer: 64 << 20 }, (error, stdout, stderr) => {
      if (error && error.code === "ENOENT") {
        missing(command);
      }
      resolve({ code: error ? error.code : 0, stdout, stderr });
    });
  });
}

function missing(command) {
  vscode.window.showErrorMessage(
    `function-starlark: cannot run "${command}". Install function-starlark or set "function-starlark.path" to the binary.`,
  );
}

async function start() {
  const { command, crds } = settings();
  client = new LanguageClient(
    "function-starlark",
    "function-starlark",
    { command, args: ["lsp"] },
    {
      documentSelector: [
        { scheme: "file", language: "starlark" },
        { scheme: "file", pattern: "**/*.{yaml,yml}" },
      ],
      initializationOptions: crds ? { crds } : undefined,
      outputChannel: output,
    },
  );
  try {
    await client.start();
  } catch (e) {
    output.appendLine(String(e));
    missing(command);
  }
}

// The open Composition rendered with the XR beside it (xr.yaml) and its
// functions.yaml, shown as a new YAML document.
async function render() {
  const editor = vscode.window.activeTextEditor;
  if (!editor) {
    return;
  }
  const file = editor.document.uri.fsPath;
  const dir = path.dirname(file);
  const xr = path.join(dir, "xr.yaml");
  if (!fs.existsSync(xr)) {
    vscode.window.showErrorMessage(`function-starlark: no xr.yaml beside ${path.basename(file)} to render with.`);
    return;
  }
  const args = ["render", xr, file];
  if (fs.existsSync(path.join(dir, "functions.yaml"))) {
    args.push(path.join(dir, "functions.yaml"));
  }
  const { code, stdout, stderr } = await run(args, dir);
  if (code !== 0) {
    output.appendLine(stderr);
    output.show(true);
    vscode.window.showErrorMessage(`function-starlark render failed: ${stderr.split("\n")[0]}`);
    return;
  }
  const doc = await vscode.workspace.openTextDocument({ language: "yaml", content: stdout });
  await vscode.window.showTextDocument(doc, { viewColumn: vscode.ViewColumn.Beside });
}

// `function-starlark test` on the open file, its report in the output channel.
async function test() {
  const editor = vscode.window.activeTextEditor;
  if (!editor) {
    return;
  }
  const file = editor.document.uri.fsPath;
  const { code, stdout, stderr } = await run(["test", file], path.dirname(file));
  output.appendLine(stdout + stderr);
  output.show(true);
  const summary = stdout.trim().split("\n").pop() || "";
  (code === 0 ? vscode.window.showInformationMessage : vscode.window.showErrorMessage)(
    `function-starlark test: ${summary}`,
  );
}

// The debugger: `function-starlark dap`, started by VS Code per session.
const adapters = {
  createDebugAdapterDescriptor(session) {
    const folder = session.workspaceFolder && session.workspaceFolder.uri.fsPath;
    return new vscode.DebugAdapterExecutable(settings().command, ["dap"], folder ? { cwd: folder } : {});
  },
};

// Fills a launch in: F5 with no launch.json debugs the open Composition
// with the XR beside it; relative paths are the workspace folder's.
const configurations = {
  resolveDebugConfiguration(folder, config) {
    if (!config.type && !config.request) {
      const editor = vscode.window.activeTextEditor;
      if (!editor) {
        return config;
      }
      const file = editor.document.uri.fsPath;
      Object.assign(config, {
        type: "function-starlark",
        request: "launch",
        name: "Debug the render",
        composition: file,
        xr: path.join(path.dirname(file), "xr.yaml"),
      });
    }
    if (!config.cwd && folder) {
      config.cwd = folder.uri.fsPath;
    }
    return config;
  },
};

async function activate(context) {
  output = vscode.window.createOutputChannel("function-starlark");
  context.subscriptions.push(
    output,
    vscode.commands.registerCommand("function-starlark.restartServer", async () => {
      if (client) {
        await client.stop();
      }
      await start();
    }),
    vscode.commands.registerCommand("function-starlark.render", render),
    vscode.commands.registerCommand("function-starlark.test", test),
    vscode.debug.registerDebugAdapterDescriptorFactory("function-starlark", adapters),
    vscode.debug.registerDebugConfigurationProvider("function-starlark", configurations),
    vscode.workspace.onWillSaveTextDocument(formatOnSave),
  );
  await start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
