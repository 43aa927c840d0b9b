/** Logger context of everything the module logs. */
export const REDLOCK_LOGGER_CONTEXT = 'Redlock';
