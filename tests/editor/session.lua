-- A Neovim session against `function-starlark lsp`, set up with the
-- shipped snippet (editors/neovim/function-starlark.lua): it opens a
-- script and a Composition of the workspace tests/it/editor.rs made, asks
-- what an author asks, applies a quick fix, and writes what it saw as JSON.
local env = vim.env
local out = {}
local function record(key, value)
  out[key] = value
end

local ok, err = pcall(function()
  dofile(env.FS_SNIPPET).setup({
    cmd = { env.FS_BIN, "lsp" },
    init_options = { crds = env.FS_CRDS },
  })

  local function open(name)
    vim.cmd("edit " .. env.FS_WORKSPACE .. "/" .. name)
    local buf = vim.api.nvim_get_current_buf()
    assert(vim.wait(20000, function()
      return #vim.lsp.buf_get_clients(buf) > 0
    end, 20), "the client attaches to " .. name)
    assert(vim.wait(20000, function()
      return #vim.diagnostic.get(buf) > 0
    end, 20), "diagnostics arrive for " .. name)
    return buf
  end

  local function ask(buf, method, line, character, extra)
    local params = {
      textDocument = { uri = vim.uri_from_bufnr(buf) },
      position = { line = line, character = character },
    }
    for k, v in pairs(extra or {}) do
      params[k] = v
    end
    local replies = vim.lsp.buf_request_sync(buf, method, params, 20000) or {}
    for _, reply in pairs(replies) do
      return reply.result
    end
    return nil
  end

  local function diagnostics(buf)
    local list = {}
    for _, d in ipairs(vim.diagnostic.get(buf)) do
      table.insert(list, { line = d.lnum, col = d.col, code = d.code, message = d.message })
    end
    return list
  end

  -- The script: main.star (see tests/it/editor.rs for its lines).
  local star = open("main.star")
  record("star_diagnostics", diagnostics(star))
  record("hover", ask(star, "textDocument/hover", 2, 6))
  record("completion", ask(star, "textDocument/completion", 5, 4))
  record("signature", ask(star, "textDocument/signatureHelp", 6, 23))
  record("definition_sibling", ask(star, "textDocument/definition", 3, 2))
  record("definition_stdlib", ask(star, "textDocument/definition", 4, 3))

  -- The Composition: its inline script's findings, and the quick fix.
  local yaml = open("composition.yaml")
  record("yaml_diagnostics", diagnostics(yaml))
  local keyword
  local lsp_diagnostics = {}
  for _, d in ipairs(vim.diagnostic.get(yaml)) do
    if d.code == "unknown-keyword" then
      keyword = d
      -- In the protocol's shape, as the client's own code action does.
      table.insert(lsp_diagnostics, {
        range = {
          start = { line = d.lnum, character = d.col },
          ["end"] = { line = d.end_lnum, character = d.end_col },
        },
        message = d.message,
        code = d.code,
        severity = d.severity,
      })
    end
  end
  assert(keyword, "the unknown keyword is diagnosed")
  local actions = ask(yaml, "textDocument/codeAction", keyword.lnum, keyword.col, {
    range = {
      start = { line = keyword.lnum, character = keyword.col },
      ["end"] = { line = keyword.lnum, character = keyword.col },
    },
    context = { diagnostics = lsp_diagnostics },
  }) or {}
  record("actions", actions)
  for _, action in ipairs(actions) do
    if action.edit then
      vim.lsp.util.apply_workspace_edit(action.edit, "utf-16")
      break
    end
  end
  record("fixed_text", table.concat(vim.api.nvim_buf_get_lines(yaml, 0, -1, false), "\n"))
  assert(vim.wait(20000, function()
    for _, d in ipairs(vim.diagnostic.get(yaml)) do
      if d.code == "unknown-keyword" then
        return false
      end
    end
    return true
  end, 20), "the fix clears the diagnostic")
  record("yaml_diagnostics_after_fix", diagnostics(yaml))
end)

if not ok then
  record("error", tostring(err))
end
local file = io.open(env.FS_OUT, "w")
file:write(vim.fn.json_encode(out))
file:close()
vim.cmd("qall!")
