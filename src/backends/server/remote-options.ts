// createEngine's { remote } options checked, apart from the server backend itself, which a page loads only when it
// names a server (select.ts imports it then): the widget's bundle stays small for the sites that do not.
import { InvalidRequestError } from '../../errors.ts';
import type { RemoteOptions } from '../../types.ts';

/** Checks createEngine's { remote } options; `param` names where they were given. */
export function checkRemote(value: unknown, param: string): RemoteOptions {
  const r = value as Partial<RemoteOptions> | null;
  const bad = (field: string, what: string): never => {
    throw new InvalidRequestError(`${param}.remote${field}: ${what}`, 'invalid_parameter', { param });
  };
  if (!r || typeof r !== 'object') bad('', 'expected { baseURL, model, apiKey?, headers? }');
  let url: URL | null = null;
  try {
    url = new URL(r!.baseURL as string);
  } catch {
    /* reported below */
  }
  if (!url || !/^https?:$/.test(url.protocol)) {
    bad('.baseURL', `expected an http(s) URL such as "http://127.0.0.1:8080/v1", got ${JSON.stringify(r!.baseURL)}`);
  }
  if (url!.username || url!.password) {
    bad('.baseURL', 'credentials in the URL are not sent by fetch: use apiKey or headers');
  }
  if (typeof r!.model !== 'string' || !r!.model) {
    bad('.model', 'expected the name of the model the server answers with');
  }
  if (r!.apiKey !== undefined && typeof r!.apiKey !== 'string') bad('.apiKey', 'expected a string');
  if (
    r!.headers !== undefined &&
    (typeof r!.headers !== 'object' || !Object.values(r!.headers ?? {}).every((v) => typeof v === 'string'))
  ) {
    bad('.headers', 'expected an object of strings');
  }
  try {
    // What fetch will send: a header it cannot (a name with a space, a key ending in a newline) fails here, not as
    // a server out of reach.
    new Headers({ ...r!.headers, ...(r!.apiKey ? { authorization: `Bearer ${r!.apiKey}` } : {}) });
  } catch (err) {
    bad(r!.apiKey ? '.apiKey or .headers' : '.headers', `not a valid HTTP header (${(err as Error).message})`);
  }
  return { baseURL: r!.baseURL!, model: r!.model!, apiKey: r!.apiKey, headers: r!.headers };
}
