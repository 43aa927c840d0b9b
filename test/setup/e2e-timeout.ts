// e2e tests boot Nest apps and a Redis fleet, and fire hundreds of requests.
jest.setTimeout(120_000);
