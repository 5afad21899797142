#!/usr/bin/env bash
# Installs the Debian packages the platform needs, only those missing (idempotent).
# PostgreSQL and Redis for the integration tests, Chromium for the browser tests,
# WordNet for offline METEOR, a font for matplotlib.
set -euo pipefail
PACKAGES=(postgresql redis-server chromium chromium-driver wordnet-base wordnet-sense-index fonts-dejavu-core)
missing=()
for pkg in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "Need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  SUDO="sudo"
fi
echo "Installing Debian packages: ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
