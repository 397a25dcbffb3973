// testsupport.js PTDECODE NODE_DIR TRACE [SOURCE LINE]: drives `ptdecode dap`
// with Microsoft's @vscode/debugadapter-testsupport (a real DAP client, as
// VS Code's own adapter tests use it): with SOURCE and LINE, its
// hitBreakpoint scenario (launch, setBreakpoints, configurationDone, stop
// at the line), then stack trace with sources, Trace scope, disassemble,
// stepping both ways; without them, stopOnEntry and the same requests.
// Exits 77 (skip) when the module is not installed in NODE_DIR.
'use strict';
const path = require('path');
const assert = require('assert');
const [ptdecode, nodeDir, trace, src, line] = process.argv.slice(2);
let DebugClient;
try {
  ({ DebugClient } = require(path.join(nodeDir, 'node_modules',
                                       '@vscode', 'debugadapter-testsupport')));
} catch (e) {
  console.log('SKIP: @vscode/debugadapter-testsupport is not installed in ' +
              nodeDir + ' (npm missing or offline at set-up)');
  process.exit(77);
}

async function stopped(dc, req, args) {
  const ev = dc.waitForEvent('stopped');
  await dc.send(req, args);
  return (await ev).body;
}

// fails unless the scenario runs to its end (node exits 0 when nothing
// is pending, even inside an unfinished async function)
process.exitCode = 1;
(async () => {
  const dc = new DebugClient(ptdecode, 'dap', 'ptdecode', undefined, true);
  dc.defaultTimeout = 60000;
  await dc.start();
  let tid;
  if (src) {
    const bp = parseInt(line, 10);
    await dc.hitBreakpoint({ trace }, { path: src, line: bp }, { line: bp }, { line: bp });
  } else {
    await Promise.all([
      dc.configurationSequence(),
      dc.launch({ trace, stopOnEntry: true }),
      dc.assertStoppedLocation('entry', {}),
    ]);
  }
  const threads = (await dc.threadsRequest()).body.threads;
  assert.ok(threads.length > 0, 'threads');
  tid = threads[0].id;
  const st = (await dc.stackTraceRequest({ threadId: tid })).body.stackFrames;
  assert.ok(st.length >= 2, 'stack has a frame and the unknown frame');
  assert.match(st[st.length - 1].name, /not in the trace/, 'oldest frame is unknown');
  if (src)
    assert.ok(st[0].source && st[0].source.path.endsWith(src), 'frame source');
  const scopes = (await dc.scopesRequest({ frameId: st[0].id })).body.scopes;
  assert.strictEqual(scopes[0].name, 'Trace');
  const vars = (await dc.variablesRequest({
    variablesReference: scopes[0].variablesReference })).body.variables;
  const insn = vars.find(v => v.name === 'instruction');
  const pos = vars.find(v => v.name === 'position');
  assert.ok(insn && pos, 'instruction and position in the Trace scope');
  const dis = (await dc.send('disassemble', {
    memoryReference: st[0].instructionPointerReference, instructionCount: 8 })).body;
  assert.strictEqual(dis.instructions.length, 8);
  if (src)   // the fixtures' code is all in the capture
    assert.ok(!dis.instructions[0].presentationHint, 'code known at the cursor');
  // forwards then back: the same instruction number again
  await stopped(dc, 'stepIn', { threadId: tid, granularity: 'instruction' });
  await stopped(dc, 'next', { threadId: tid });
  await stopped(dc, 'stepBack', { threadId: tid });
  const back = await stopped(dc, 'stepBack', { threadId: tid, granularity: 'instruction' });
  assert.ok(['step', 'entry', 'exception'].includes(back.reason), 'stepBack: ' + back.reason);
  await stopped(dc, 'evaluate', { expression: 'pos ' + pos.value });
  const again = (await dc.variablesRequest({
    variablesReference: scopes[0].variablesReference })).body.variables;
  assert.strictEqual(again.find(v => v.name === 'position').value, pos.value);
  assert.strictEqual(again.find(v => v.name === 'instruction').value, insn.value);
  const out = await stopped(dc, 'stepOut', { threadId: tid });
  assert.ok(out.reason, 'stepOut stops');
  const end = await stopped(dc, 'continue', { threadId: tid });
  if (!src)
    assert.ok(end.reason === 'exception' || /end of the trace/.test(end.description || ''),
              'continue: to the end or a decode error: ' + JSON.stringify(end));
  const rev = await stopped(dc, 'reverseContinue', { threadId: tid });
  assert.ok(rev.reason, 'reverseContinue stops');
  await dc.stop();             // disconnect, then the adapter ends
  process.exitCode = 0;
  console.log('testsupport: ' + trace + ': ' + threads.length + ' threads, ' +
              st.length + ' frames, stepping both ways, disassemble, goto: ok');
})().catch(e => { console.error('FAIL: ' + (e.stack || e)); process.exit(1); });
