// The optional peer dependencies the package must work without.
'use strict';
module.exports = ['@nestjs/terminus', '@opentelemetry/api'];
