-- Driven by tests/lsp/test_neovim.py: Debian's Neovim (0.7), started with the configuration block of
-- docs/guide/language-server.md as its init.lua, opens $LSP_FILE (the block attaches `furiosa-opt lsp`),
-- waits for the server's diagnostics, asks for a hover at $LSP_LINE:$LSP_COLUMN (0-based) and writes both
-- to $LSP_OUT as JSON, then quits.
vim.cmd("edit " .. vim.fn.fnameescape(vim.env.LSP_FILE))
local arrived = vim.wait(30000, function() return #vim.diagnostic.get(0) > 0 end, 50)
local params = {
  textDocument = { uri = vim.uri_from_bufnr(0) },
  position = { line = tonumber(vim.env.LSP_LINE), character = tonumber(vim.env.LSP_COLUMN) },
}
local answers = vim.lsp.buf_request_sync(0, "textDocument/hover", params, 10000) or {}
local hover = ""
for _, answer in pairs(answers) do
  if answer.result then hover = answer.result.contents.value end
end
local diagnostics = {}
for _, d in ipairs(vim.diagnostic.get(0)) do
  table.insert(diagnostics, { code = d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code),
                              lnum = d.lnum, col = d.col, message = d.message })
end
local out = io.open(vim.env.LSP_OUT, "w")
out:write(vim.fn.json_encode({ arrived = arrived, diagnostics = diagnostics, hover = hover }))
out:close()
vim.lsp.stop_client(vim.lsp.get_active_clients())
vim.cmd("qall!")
