// Starts s3rver (the pinned test-only S3 emulator, package.json) for the C++ storage tests:
//   node s3rver_main.cjs DIRECTORY BUCKET...
// listens on a free loopback port, prints one line {"port": N} once it accepts connections, and exits
// when its stdin closes (the test process ended, however it ended). s3rver checks SigV4 signatures
// with its default keys S3RVER / S3RVER.
'use strict';
const S3rver = require('s3rver');

const [directory, ...buckets] = process.argv.slice(2);
const server = new S3rver({
  address: '127.0.0.1',
  port: 0,
  silent: true,
  directory,
  configureBuckets: buckets.map(name => ({ name })),
});
server.run().then(
  address => {
    process.stdout.write(JSON.stringify({ port: address.port }) + '\n');
  },
  error => {
    process.stderr.write(`s3rver failed to start: ${error.stack || error}\n`);
    process.exit(1);
  },
);
process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
process.stdin.on('error', () => process.exit(0));
