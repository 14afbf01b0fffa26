#!/usr/bin/env node
// Starts the dev host: reads the config, listens, prints `ready http://ADDR`, and shuts down
// cleanly on SIGTERM/SIGINT (open streams are closed so shutdown does not hang).
import { ConfigError, loadConfig } from './config.mjs';
import { createDevHost } from './server.mjs';

let config;
try {
  config = loadConfig(process.env);
} catch (error) {
  console.error(error instanceof ConfigError ? error.message : 'dev host: cannot start');
  process.exit(2);
}

const server = createDevHost(config);
server.listen(config.port, config.host, () => {
  const address = server.address();
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  console.log(`ready http://${host}:${address.port}`);
});

function shutdown() {
  server.close(() => process.exit(0));
  server.closeAllConnections();
}
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
