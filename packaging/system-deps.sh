#!/usr/bin/env bash
# Install the system libraries Qt's xcb platform plugin needs for a real window,
# plus Xvfb for headless screenshot tests, the Pango and HarfBuzz-subset libraries WeasyPrint draws PDF reports
# with (WeasyPrint 70 warns without the latter, and the tests turn warnings into errors),
# and headless Chromium and poppler for the report tests. Debian/Ubuntu only; needs root (or sudo).
# Does nothing when they are already there. Without them the app still runs
# headless (QT_QPA_PLATFORM=offscreen) and the CLI needs none of this.
#   system-deps.sh           install what is missing (waits up to 10 minutes for another apt/dpkg)
#   system-deps.sh --check   exit 1, naming what is missing, if anything is
set -u
pkgs=(xvfb libxcb-cursor0 libxkbcommon-x11-0 libxcb-icccm4 libxcb-image0 libxcb-keysyms1 libxcb-randr0
      libxcb-render-util0 libxcb-shape0 libxcb-xinerama0 libxcb-xkb1 libegl1 libgl1 libfontconfig1 libdbus-1-3
      libpango-1.0-0 libpangoft2-1.0-0 libharfbuzz-subset0 fonts-dejavu-core chromium poppler-utils)
command -v dpkg-query >/dev/null 2>&1 || { echo "system-deps: not a Debian-like system; install the Qt xcb libraries yourself" >&2; exit 0; }
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${1:-}" = "--check" ]; then
  [ ${#missing[@]} -eq 0 ] && exit 0
  echo "system-deps: missing ${missing[*]}; install them with: apt-get install -y ${missing[*]}" >&2
  exit 1
fi
[ ${#missing[@]} -eq 0 ] && exit 0
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "system-deps: missing ${missing[*]}; run as root: apt-get install -y ${missing[*]}" >&2; exit 0; fi
fi
echo "system-deps: installing ${missing[*]}" >&2
# Another apt-get or dpkg (an unattended upgrade) may hold the lock: wait for it rather than skip.
lock=(-o DPkg::Lock::Timeout=600)
$SUDO apt-get "${lock[@]}" update -qq >/dev/null \
  && DEBIAN_FRONTEND=noninteractive $SUDO apt-get "${lock[@]}" install -y -qq "${missing[@]}" >/dev/null \
  || echo "system-deps: apt-get failed; the GUI may only run offscreen" >&2
