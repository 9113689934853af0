#!/bin/sh
# The image's entry point: `mockbroker ARGS...`, where `serve` (also when ARGS are empty or start with
# an option) reads /etc/mockbroker/mockbroker.toml when one is mounted there, before its other options.
# Environment variables MOCKBROKER_* override the file, and `-c key=value` overrides both.
set -eu
config=/etc/mockbroker/mockbroker.toml
if [ "$#" -eq 0 ] || [ "${1#-}" != "$1" ]; then
  set -- serve "$@"
fi
if [ "$1" = serve ] && [ -f "$config" ]; then
  shift
  set -- serve --config "$config" "$@"
fi
exec mockbroker "$@"
