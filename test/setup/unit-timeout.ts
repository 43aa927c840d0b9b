// Unit specs include simulations in virtual time that are CPU-bound: 5 s of jest's default is
// seconds of real CPU on a quiet machine but not on a loaded one (core-safety.spec's item 1 hit
// it with both cores busy). A test that times out keeps running after jest moves on, and its
// closures then drive the next test's clock and nodes (describe-level `let`s the next
// `beforeEach` reassigns), so one slow test showed as a second, unrelated failure. Virtual time
// makes a generous bound safe: nothing here waits on a real timer for its verdict.
jest.setTimeout(60_000);
