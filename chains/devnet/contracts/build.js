// Compiles TestToken.sol with the pinned solc-js and writes the artifacts the
// Go package embeds: TestToken.abi (JSON) and TestToken.bin (hex, no 0x).
// Run it through ./build.sh, which installs the pinned compiler first.
'use strict';
const fs = require('fs');
const path = require('path');
const solc = require('solc');

const dir = __dirname;
const source = fs.readFileSync(path.join(dir, 'TestToken.sol'), 'utf8');
const input = {
  language: 'Solidity',
  sources: { 'TestToken.sol': { content: source } },
  settings: {
    // paris: no PUSH0, so the bytecode also deploys on nodes that lag behind.
    evmVersion: 'paris',
    optimizer: { enabled: true, runs: 200 },
    metadata: { bytecodeHash: 'none' },
    outputSelection: { '*': { TestToken: ['abi', 'evm.bytecode.object'] } },
  },
};
const output = JSON.parse(solc.compile(JSON.stringify(input)));
const errors = (output.errors || []).filter((e) => e.severity === 'error');
for (const e of output.errors || []) console.error(e.formattedMessage);
if (errors.length > 0) process.exit(1);

const c = output.contracts['TestToken.sol'].TestToken;
fs.writeFileSync(path.join(dir, 'TestToken.abi'), JSON.stringify(c.abi, null, 2) + '\n');
fs.writeFileSync(path.join(dir, 'TestToken.bin'), c.evm.bytecode.object + '\n');
console.log(`compiled TestToken.sol with solc ${solc.version()}: ${c.evm.bytecode.object.length / 2} bytes`);
