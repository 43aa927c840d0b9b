/** Injection token of the admin token the `/locks` routes require (a string, or undefined). */
export const ADMIN_TOKEN = Symbol('ADMIN_TOKEN');

/** The request header that carries the admin token. */
export const ADMIN_TOKEN_HEADER = 'x-admin-token';
