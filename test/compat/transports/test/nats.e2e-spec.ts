// A NATS microservice: a real nats-server (started by run.mjs), both instances in one queue group.
import { rpcSuite } from './rpc-suite.js';

rpcSuite('nats', 'NATS');
