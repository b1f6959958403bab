// Starts `function-starlark lsp` for .star files and YAML files (the
// server answers for Compositions' inline scripts and ignores other YAML).
const vscode = require("vscode");
const { LanguageClient } = require("vscode-languageclient/node");

let client;

function activate() {
  const settings = vscode.workspace.getConfiguration("function-starlark");
  const command = settings.get("path") || "function-starlark";
  const crds = settings.get("crds");
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
    },
  );
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
