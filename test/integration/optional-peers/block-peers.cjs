// Preload (`node --require`): CommonJS resolution of the optional peers fails with
// MODULE_NOT_FOUND, exactly as when they are not installed, although they are in node_modules
// (the repository's own tests need them). Every require() goes through _resolveFilename.
'use strict';
const Module = require('node:module');
const blocked = require('./blocked-peers.cjs');

const isBlocked = (request) =>
  blocked.some((name) => request === name || request.startsWith(`${name}/`));

const resolveFilename = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  if (typeof request === 'string' && isBlocked(request)) {
    const error = new Error(`Cannot find module '${request}' (blocked: not installed)`);
    error.code = 'MODULE_NOT_FOUND';
    throw error;
  }
  return resolveFilename.call(this, request, ...rest);
};
