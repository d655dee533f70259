// strftime as Python's C locale gives it (what chat templates' strftime_now was written against): English month and
// day names whatever the browser's language. A French browser must still write "22 Nov 2026" into Llama 3's system
// header, as the model was trained on.
const MONTHS = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];
const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];

/** `format` filled from `date` in local time; glibc's `%-d` (no padding) works too; unknown fields stay as written. */
export function strftime(date: Date, format: string): string {
  return format.replace(/%(-?)([a-zA-Z%])/g, (field, noPad: string, code: string) => {
    const pad = (n: number, width = 2) => (noPad ? String(n) : String(n).padStart(width, '0'));
    const hour12 = date.getHours() % 12 || 12;
    switch (code) {
      case 'Y':
        return String(date.getFullYear());
      case 'y':
        return pad(date.getFullYear() % 100);
      case 'm':
        return pad(date.getMonth() + 1);
      case 'd':
        return pad(date.getDate());
      case 'e':
        return String(date.getDate()).padStart(2, ' ');
      case 'H':
        return pad(date.getHours());
      case 'I':
        return pad(hour12);
      case 'M':
        return pad(date.getMinutes());
      case 'S':
        return pad(date.getSeconds());
      case 'p':
        return date.getHours() < 12 ? 'AM' : 'PM';
      case 'b':
        return MONTHS[date.getMonth()]!.slice(0, 3);
      case 'B':
        return MONTHS[date.getMonth()]!;
      case 'a':
        return DAYS[date.getDay()]!.slice(0, 3);
      case 'A':
        return DAYS[date.getDay()]!;
      case 'j':
        return pad(dayOfYear(date), 3);
      case '%':
        return '%';
      default:
        return field;
    }
  });
}

function dayOfYear(date: Date): number {
  const start = new Date(date.getFullYear(), 0, 1);
  return (
    Math.round(
      (new Date(date.getFullYear(), date.getMonth(), date.getDate()).getTime() - start.getTime()) / 86_400_000,
    ) + 1
  );
}
