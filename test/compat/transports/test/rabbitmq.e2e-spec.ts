// A RabbitMQ microservice: a real rabbitmq-server (started by run.mjs), both instances consuming
// one queue.
import { rpcSuite } from './rpc-suite.js';

rpcSuite('rabbitmq', 'RabbitMQ');
