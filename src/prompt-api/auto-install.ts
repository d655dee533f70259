// hearth-llm/prompt-api/polyfill: importing it installs LanguageModel from the page's
// <script type="application/json" id="hearth-prompt-api"> (polyfill.ts).
import { installPromptApi, pageConfig } from './polyfill.ts';

const config = pageConfig();
if (config) installPromptApi(config);
