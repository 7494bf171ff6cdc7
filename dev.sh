#!/usr/bin/env bash
# The two quickstart commands, each doing its own set-up on a fresh machine:
#   ./dev.sh demo   - the offline demo (local emulators, no API key, no network)
#   ./dev.sh test   - lint, type-check and the whole test suite
set -euo pipefail
cd "$(dirname "$0")"

PY=${PYTHON:-python3}
VENV=.venv

setup() {
  if [ ! -x "$VENV/bin/python" ]; then
    "$PY" -m venv "$VENV"
  fi
  local stamp="$VENV/.installed"
  if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    "$VENV/bin/python" -m pip install --quiet --upgrade pip
    "$VENV/bin/python" -m pip install --quiet -e '.[dev,postgres]'
    touch "$stamp"
  fi
}

ensure_postgres() {
  # The PostgreSQL tests start a throwaway server from Debian's binaries.
  if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || [ -n "${HERMES_TEST_PG_URL:-}" ]; then
    return
  fi
  if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    echo "installing PostgreSQL for the database tests (apt-get)..."
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  else
    echo "warning: PostgreSQL binaries not found; install 'postgresql' or set HERMES_TEST_PG_URL" >&2
  fi
}

export NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost

case "${1:-}" in
  demo)
    setup
    shift
    exec "$VENV/bin/hermes" demo "$@"
    ;;
  test)
    setup
    ensure_postgres
    shift
    "$VENV/bin/ruff" check .
    "$VENV/bin/ruff" format --check .
    "$VENV/bin/mypy" agent gateway plugins sandbox bench
    exec "$VENV/bin/python" -m pytest -q "$@"
    ;;
  *)
    echo "usage: ./dev.sh demo | ./dev.sh test" >&2
    exit 2
    ;;
esac
