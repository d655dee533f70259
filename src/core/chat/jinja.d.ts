// The types of jinja.js: the package's published declarations (see jinja.js).
export { Template } from '@huggingface/jinja';
