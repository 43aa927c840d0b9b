// Integration and e2e tests start real redis-server processes and exercise leases of hundreds
// of milliseconds to seconds; `testTimeout` is not a per-project option in jest, hence this.
jest.setTimeout(60_000);
