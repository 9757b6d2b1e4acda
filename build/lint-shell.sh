#!/usr/bin/env bash
# Runs shellcheck over every shell script in the repository and fails on any
# finding. Scripts are found by name (*.sh) or by a shell on their #! line, so a
# new one is checked without being listed here. Files git ignores (node_modules)
# are left out; new files not yet added are checked.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v shellcheck >/dev/null || { echo "lint-shell: shellcheck is missing (build/host/setup.sh installs it)" >&2; exit 1; }

scripts=()
while IFS= read -r -d '' file; do
  [ -f "$file" ] || continue # listed by git but deleted in the work tree
  if [[ "$file" == *.sh ]] || head -n1 "$file" | grep -qE '^#!.*[/ ](ba|da|a)?sh( |$)'; then
    scripts+=("$file")
  fi
done < <(git ls-files -z --cached --others --exclude-standard)

shellcheck "${scripts[@]}"
echo "lint-shell: ${#scripts[@]} scripts, no findings" >&2
