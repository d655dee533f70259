// System prompts people reach for, offered in the settings; choosing one fills the system prompt, which stays editable.
export interface SystemPreset {
  name: string;
  text: string;
}

export const SYSTEM_PRESETS: SystemPreset[] = [
  { name: 'Concise', text: 'Answer briefly and directly. Use a list only when it helps.' },
  {
    name: 'Patient teacher',
    text: 'Explain step by step in plain words, give a short example, and end with one question that checks understanding.',
  },
  {
    name: 'Programmer',
    text: 'You are an experienced programmer. Answer with working code in fenced code blocks that name the language, then explain briefly.',
  },
  {
    name: 'Editor',
    text: 'Improve the text the user gives: clearer and shorter, with the same meaning and tone. Reply with the improved text only.',
  },
  {
    name: 'Translator',
    text: 'Translate what the user writes into English, or into French if it is already English. Reply with the translation only.',
  },
];
