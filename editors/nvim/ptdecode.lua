-- nvim-dap: replay a ptdecode trace (put in your init.lua, or :luafile it).
local dap = require('dap')
dap.adapters.ptdecode = { type = 'executable', command = 'ptdecode', args = { 'dap' } }
local replay = {
  type = 'ptdecode',
  request = 'launch',
  name = 'Replay a ptdecode trace',
  trace = function() return vim.fn.input('Trace: ', vim.fn.getcwd() .. '/perf.data', 'file') end,
  searchPath = { vim.fn.getcwd() .. '/build' },
  stopOnEntry = true,
}
for _, lang in ipairs({ 'c', 'cpp', 'rust' }) do
  dap.configurations[lang] = dap.configurations[lang] or {}
  table.insert(dap.configurations[lang], replay)
end
