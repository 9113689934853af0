#!/bin/sh
# mockbroker-pip-install VENV PIP_INSTALL_ARGS...: pip install into VENV (made with `python3 -m venv`
# when absent), for the Dockerfiles.  PIP_CA (a CA bundle for a TLS-intercepting proxy) and PIP_CACHE
# (a pip cache directory mounted into the build) are used when set; without PIP_CACHE nothing is cached.
set -eu
venv=$1
shift
[ -x "$venv/bin/pip" ] || python3 -m venv "$venv"
if [ -n "${PIP_CA:-}" ]; then set -- --cert "$PIP_CA" "$@"; fi
if [ -n "${PIP_CACHE:-}" ]; then set -- --cache-dir "$PIP_CACHE" "$@"; else set -- --no-cache-dir "$@"; fi
exec "$venv/bin/pip" install --disable-pip-version-check --no-input --quiet "$@"
