-- A Neovim session on a script that loads constructors `gen` wrote from a
-- real provider's CRDs, with no CRD folder configured (the schema is in
-- the modules): it asks for fields, values, signatures, hovers and the
-- outline, reads each diagnostic, applies each quick fix in turn, and
-- writes what it saw as JSON (tests/it/editor.rs reads it).
local env = vim.env
local out = {}
local function record(key, value)
  out[key] = value
end

local ok, err = pcall(function()
  dofile(env.FS_SNIPPET).setup({ cmd = { env.FS_BIN, "lsp" } })

  vim.cmd("edit " .. env.FS_WORKSPACE .. "/main.star")
  local buf = vim.api.nvim_get_current_buf()
  assert(vim.wait(20000, function()
    return #vim.lsp.buf_get_clients(buf) > 0
  end, 20), "the client attaches")
  assert(vim.wait(20000, function()
    return #vim.diagnostic.get(buf) > 0
  end, 20), "diagnostics arrive")

  -- The 0-based column just after `needle` on `line` (0-based).
  local function after(line, needle)
    local text = vim.api.nvim_buf_get_lines(buf, line, line + 1, false)[1]
    local s, e = string.find(text, needle, 1, true)
    assert(s, needle .. " on line " .. line)
    return e
  end

  local function ask(method, line, character, extra)
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

  local function diagnostics()
    local list = {}
    for _, d in ipairs(vim.diagnostic.get(buf)) do
      table.insert(list, {
        line = d.lnum, col = d.col, end_col = d.end_col, code = d.code, message = d.message,
      })
    end
    return list
  end

  -- Inside `ObjectSpec(forProvider = ..., ` on line 5: the other fields,
  -- and the signature with the next field active.
  local inside = after(5, "), ")
  record("completion", ask("textDocument/completion", 5, inside))
  record("signature", ask("textDocument/signatureHelp", 5, inside))
  -- Inside the quotes of `deletionPolicy = "` on line 3: the allowed values.
  record("values", ask("textDocument/completion", 3, after(3, 'deletionPolicy = "')))
  record("hover", ask("textDocument/hover", 3, after(3, "ObjectSpec(") + 2))
  record("outline", ask("textDocument/documentSymbol", 0, 0))
  record("diagnostics", diagnostics())

  -- Each quick fix in turn, on the diagnostics as they are then.
  local applied = {}
  for _, code in ipairs({ "unknown-field", "field-enum", "missing-field", "undefined" }) do
    local found
    for _, d in ipairs(vim.diagnostic.get(buf)) do
      if d.code == code then
        found = d
      end
    end
    assert(found, "a " .. code .. " diagnostic")
    local lsp = (found.user_data or {}).lsp or {}
    local given = {
      range = {
        start = { line = found.lnum, character = found.col },
        ["end"] = { line = found.end_lnum, character = found.end_col },
      },
      message = found.message,
      code = found.code,
      severity = found.severity,
      data = lsp.data,
    }
    local actions = ask("textDocument/codeAction", found.lnum, found.col, {
      range = given.range,
      context = { diagnostics = { given } },
    }) or {}
    local chosen = actions[1]
    for _, action in ipairs(actions) do
      if code ~= "undefined" or string.find(action.title, "^Load ") then
        chosen = action
        break
      end
    end
    assert(chosen, "a quick fix for " .. code)
    table.insert(applied, chosen.title)
    vim.lsp.util.apply_workspace_edit(chosen.edit, "utf-16")
    assert(vim.wait(20000, function()
      for _, d in ipairs(vim.diagnostic.get(buf)) do
        if d.code == code then
          return false
        end
      end
      return true
    end, 20), "fixing " .. code .. " clears it")
  end
  record("applied", applied)
  record("fixed_text", table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n"))
  record("diagnostics_after", diagnostics())
end)

if not ok then
  record("error", tostring(err))
end
local file = io.open(env.FS_OUT, "w")
file:write(vim.fn.json_encode(out))
file:close()
vim.cmd("qall!")
