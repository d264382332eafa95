#!/usr/bin/env bash
# Installs Debian's Chromium when no browser is on the machine, for the
# admin interface's browser tests (cmd/cgp/admin_browser_test.go, driven by
# chromedp). Nothing is downloaded at test time. CGP_CHROMIUM names another
# binary and skips the install.
set -euo pipefail
if [ -n "${CGP_CHROMIUM:-}" ]; then
  exit 0
fi
for b in chromium chromium-browser google-chrome google-chrome-stable; do
  if command -v "$b" >/dev/null; then exit 0; fi
done
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium
