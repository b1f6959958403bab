-- function-starlark's language server in Neovim's built-in LSP client
-- (Neovim 0.7 or later): `.star` files, and YAML files holding a
-- StarlarkInput (Compositions). Copy this file onto your runtimepath as
-- lua/function-starlark.lua and call, in init.lua:
--
--   require("function-starlark").setup()
--   -- or, naming the binary and a CRD folder for schema diagnostics:
--   require("function-starlark").setup({
--     cmd = { "/usr/local/bin/function-starlark", "lsp" },
--     init_options = { crds = "crds" },
--   })
--
-- A `function-starlark.toml` at the workspace root (`crds = "crds"`) does
-- the same as `init_options.crds` for everyone working on the repository.
local M = {}

-- The workspace root of a file: the nearest folder up with a
-- function-starlark.toml or .git, else the file's own folder.
local function root_of(path)
  local dir = vim.fn.fnamemodify(path, ":p:h")
  local marker = vim.fn.findfile("function-starlark.toml", dir .. ";")
  if marker == "" then
    marker = vim.fn.finddir(".git", dir .. ";")
  end
  if marker == "" then
    return dir
  end
  return vim.fn.fnamemodify(marker, ":p:h:h")
end

-- Whether a buffer is something the server understands.
local function wanted(buf, path)
  if path:match("%.star$") then
    return true
  end
  if not (path:match("%.ya?ml$")) then
    return false
  end
  for _, line in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
    if line:match("kind:%s*StarlarkInput") then
      return true
    end
  end
  return false
end

function M.setup(opts)
  opts = opts or {}
  local clients = {}
  vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile" }, {
    pattern = { "*.star", "*.yaml", "*.yml" },
    callback = function(args)
      local path = vim.api.nvim_buf_get_name(args.buf)
      if not wanted(args.buf, path) then
        return
      end
      local root = root_of(path)
      if not clients[root] then
        clients[root] = vim.lsp.start_client({
          name = "function-starlark",
          cmd = opts.cmd or { "function-starlark", "lsp" },
          root_dir = root,
          init_options = opts.init_options,
          on_attach = opts.on_attach,
        })
      end
      if clients[root] then
        vim.lsp.buf_attach_client(args.buf, clients[root])
      end
    end,
  })
end

return M
