/**
 * A setting an operator fixes by reading one line (a bad RETRACT_ENGINE, PORT or RETRACT_EMBEDDER, an engine that
 * is not the database's): `npm start` prints the message alone and exits 1, a worker exits 2; any other failure
 * keeps its stack.
 */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}
