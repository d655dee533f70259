# The reference for test/quick/templates.test.ts: renders each case (template file + the context Hearth gives the template)
# with Python's jinja2, set up as Hugging Face transformers renders chat templates (sandboxed, trim_blocks,
# lstrip_blocks, loop controls, a tojson that keeps non-ASCII, raise_exception, strftime_now). The clock is fixed to
# the date the test gives Hearth. Reads the cases (a template file or its source, and a context) as JSON on stdin;
# writes [{"ok": text} | {"error": message}].
import json
import sys
from datetime import datetime

import jinja2
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(value, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


request = json.load(sys.stdin)
now = datetime(*request['now'])
env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
env.filters['tojson'] = tojson
env.globals['raise_exception'] = raise_exception
env.globals['strftime_now'] = lambda fmt: now.strftime(fmt)

compiled = {}
results = []
for case in request['cases']:
    try:
        key = case.get('template') or case['source']
        if key not in compiled:
            if 'template' in case:
                with open(key, encoding='utf-8') as f:
                    compiled[key] = env.from_string(f.read())
            else:
                compiled[key] = env.from_string(key)
        results.append({'ok': compiled[key].render(**case['context'])})
    except Exception as e:  # the template refuses the conversation, or jinja2 cannot run it
        results.append({'error': f'{type(e).__name__}: {e}'})
json.dump(results, sys.stdout)
