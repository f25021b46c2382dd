// Starts azurite's Blob service (the pinned test-only Azure Storage emulator, package.json) for the C++
// storage tests and the k3 weights scripts:
//   node azurite_main.cjs [CONTAINER...]
// runs it in memory on a free loopback port, creates the containers (Create Container signed with the
// dev account's Shared Key by node's own crypto), prints one line {"port": N} once they exist, and stops
// it when its own stdin closes (the test process ended, however it ended). azurite checks
// Shared Key signatures and SAS tokens of its dev account devstoreaccount1 (azurite_env.sh has the key).
// Flags from spec/toolchain.md: no telemetry (it would reach the internet), any x-ms-version accepted.
'use strict';
const { spawn } = require('child_process');
const crypto = require('crypto');
const http = require('http');
const path = require('path');

const account = 'devstoreaccount1';
const accountKey = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';
const containers = process.argv.slice(2);

// PUT /devstoreaccount1/NAME?restype=container with a Shared Key signature; resolves on 201 or 409.
function createContainer(port, name) {
  const date = new Date().toUTCString();
  const version = '2021-12-02';
  const stringToSign = `PUT\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:${date}\nx-ms-version:${version}\n` +
    `/${account}/${account}/${name}\nrestype:container`;
  const signature = crypto.createHmac('sha256', Buffer.from(accountKey, 'base64')).update(stringToSign, 'utf8')
    .digest('base64');
  return new Promise((resolve, reject) => {
    const request = http.request({
      host: '127.0.0.1', port, method: 'PUT', path: `/${account}/${name}?restype=container`,
      headers: { 'x-ms-date': date, 'x-ms-version': version, 'Content-Length': 0,
        Authorization: `SharedKey ${account}:${signature}` },
    }, response => {
      response.resume();
      if (response.statusCode === 201 || response.statusCode === 409) resolve();
      else reject(new Error(`creating container ${name}: HTTP ${response.statusCode}`));
    });
    request.on('error', reject);
    request.end();
  });
}

const main = path.join(__dirname, 'node_modules', 'azurite', 'dist', 'src', 'blob', 'main.js');
const child = spawn(process.execPath, [main, '--blobHost', '127.0.0.1', '--blobPort', '0', '--disableTelemetry',
  '--skipApiVersionCheck', '--inMemoryPersistence', '--silent'], { stdio: ['ignore', 'pipe', 'inherit'] });

let seen = '';
let reported = false;
child.stdout.on('data', chunk => {
  if (reported) return;
  seen = (seen + chunk.toString()).slice(-4096);
  const match = /successfully listens on http:\/\/127\.0\.0\.1:(\d+)/.exec(seen);
  if (match) {
    reported = true;
    const port = Number(match[1]);
    Promise.all(containers.map(name => createContainer(port, name))).then(
      () => process.stdout.write(JSON.stringify({ port }) + '\n'),
      error => {
        process.stderr.write(`${error.message}\n`);
        child.kill('SIGKILL');
        process.exit(1);
      });
  }
});
child.on('exit', code => {
  process.stderr.write(`azurite exited (code ${code})${reported ? '' : ': ' + seen}\n`);
  process.exit(1);
});
const stop = () => {
  child.kill('SIGKILL');
  process.exit(0);
};
process.stdin.resume();
process.stdin.on('end', stop);
process.stdin.on('error', stop);
