// Trusted Types (a page's `require-trusted-types-for 'script'`): the two sinks Hearth's page code uses go through one
// policy named 'hearth' — DOMPurify's parse of model output into an inert document (its result is the sanitised
// fragment, never the input) and the engine worker's script URL. A page that lists allowed policies adds
// `trusted-types hearth`. The policy object stays in this module, so no other code can launder strings through it.

interface Policy {
  createHTML(html: string): string;
  createScriptURL(url: string): string;
}

let policy: Policy | null | undefined;

/** The 'hearth' policy, or null where the browser has no Trusted Types (strings then go to the sinks as they are). */
export function hearthPolicy(): Policy | null {
  if (policy !== undefined) return policy;
  const tt = (globalThis as { trustedTypes?: { createPolicy(name: string, rules: Policy): Policy } }).trustedTypes;
  policy = null;
  if (!tt) return policy;
  try {
    policy = tt.createPolicy('hearth', {
      createHTML: (html) => html,
      createScriptURL: (url) => {
        // Workers can only be started from this origin's scripts anyway; anything else is a bug, not a request.
        const u = new URL(url, globalThis.location?.href);
        if (u.origin !== globalThis.location?.origin) {
          throw new TypeError(`hearth: refusing script URL ${url} from another origin`);
        }
        return u.href;
      },
    });
  } catch {
    // The page's CSP lists the policies it allows and 'hearth' is not one (or it exists twice without
    // 'allow-duplicates'): the sinks below then fail, and say which directive to change.
  }
  return policy;
}

/** Why a Trusted Types sink refused a string, as a sentence that says what to add to the page's CSP. */
export const TRUSTED_TYPES_HINT =
  "the page requires Trusted Types and its Content-Security-Policy does not allow the 'hearth' " +
  'policy: add `hearth` to its `trusted-types` directive';

/** A URL for `new Worker()` that Trusted Types accept. */
export function scriptUrl(url: string): string {
  return (hearthPolicy()?.createScriptURL(url) ?? url) as string;
}
