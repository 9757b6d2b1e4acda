// A folder on the host, as the helper takes it: an absolute path, typed, or
// picked in the system's dialog when the app runs in the Electron shell.
import { folderPicker } from '../shell.js';

export function FolderField({
  label,
  placeholder,
  value,
  onChange,
  disabled = false,
}: {
  label: string;
  placeholder: string;
  value: string;
  onChange: (path: string) => void;
  disabled?: boolean;
}) {
  const pick = folderPicker();
  return (
    <span className="folder-field">
      <input aria-label={label} placeholder={placeholder} value={value} onChange={(e) => onChange(e.target.value)} disabled={disabled} spellCheck={false} />
      {pick && (
        <button
          type="button"
          disabled={disabled}
          onClick={() =>
            void pick().then((picked) => {
              if (picked) onChange(picked);
            })
          }
        >
          Choose…
        </button>
      )}
    </span>
  );
}
