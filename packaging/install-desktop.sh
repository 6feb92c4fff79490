#!/usr/bin/env bash
# Install Splitscope's desktop entry, icon and the ONNX MIME type for this user (no root needed):
#   packaging/install-desktop.sh [--prefix DIR] [--exec COMMAND] [--uninstall]
# DIR defaults to $XDG_DATA_HOME or ~/.local/share. COMMAND defaults to the bundle built here
# (dist/splitscope/splitscope), else splitscope-gui on PATH. .onnx files then open in Splitscope from the
# file manager, with its icon.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
prefix="${XDG_DATA_HOME:-$HOME/.local/share}"
exec_cmd=""
uninstall=0
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix="$2"; shift 2 ;;
    --exec) exec_cmd="$2"; shift 2 ;;
    --uninstall) uninstall=1; shift ;;
    *) echo "install-desktop: unknown argument $1 (use --prefix DIR, --exec COMMAND, --uninstall)" >&2; exit 2 ;;
  esac
done
apps="$prefix/applications"; icons="$prefix/icons/hicolor/scalable/apps"; mime="$prefix/mime/packages"
if [ "$uninstall" = 1 ]; then
  rm -f "$apps/splitscope.desktop" "$icons/splitscope.svg" "$mime/splitscope.xml"
else
  if [ -z "$exec_cmd" ]; then
    if [ -x "$root/dist/splitscope/splitscope" ]; then exec_cmd="$root/dist/splitscope/splitscope"
    elif command -v splitscope-gui >/dev/null 2>&1; then exec_cmd="$(command -v splitscope-gui)"
    else echo "install-desktop: build the bundle first (pyinstaller packaging/splitscope.spec) or install splitscope, or give --exec" >&2; exit 2
    fi
  fi
  mkdir -p "$apps" "$icons" "$mime"
  sed "s|^Exec=.*|Exec=\"$exec_cmd\" %f|" "$here/splitscope.desktop" > "$apps/splitscope.desktop.tmp"
  mv "$apps/splitscope.desktop.tmp" "$apps/splitscope.desktop"
  cp "$here/splitscope.svg" "$icons/splitscope.svg"
  cp "$here/splitscope-mime.xml" "$mime/splitscope.xml"
fi
# The desktop's caches, where their tools are installed (they are optional: the files alone work after a login).
command -v update-mime-database >/dev/null 2>&1 && update-mime-database "$prefix/mime" >/dev/null 2>&1 || true
command -v update-desktop-database >/dev/null 2>&1 && update-desktop-database "$apps" >/dev/null 2>&1 || true
command -v gtk-update-icon-cache >/dev/null 2>&1 && gtk-update-icon-cache -q -t "$prefix/icons/hicolor" 2>/dev/null || true
echo "install-desktop: $([ "$uninstall" = 1 ] && echo removed || echo installed) in $prefix"
