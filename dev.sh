#!/usr/bin/env bash
# The two quickstart commands, each doing its own set-up on a fresh machine, and the lock:
#   ./dev.sh demo   - the offline demo (local emulators, no API key, no network)
#   ./dev.sh test   - lint, type-check, import contracts and the whole test suite
#   ./dev.sh lock   - refresh requirements.lock after changing pyproject.toml's dependencies
#                     (keeps the other pins; `./dev.sh lock --upgrade` takes the newest in range)
# Set-up installs exactly the versions in requirements.lock (hashes checked), then the project
# itself without dependencies; it runs again only when pyproject.toml or the lock changes.
set -euo pipefail
cd "$(dirname "$0")"

PY=${PYTHON:-python3}
VENV=.venv

# The locks are for Python 3.11 on Linux (x86_64). requirements.lock: the runtime, dev and
# postgres dependencies (this script's .venv, CI); requirements-runtime.lock: the same versions
# without the dev tools (the Docker image).
LOCK=requirements.lock
RUNTIME_LOCK=requirements-runtime.lock
UV_VERSION='uv>=0.13,<0.14'

SETUP_LOG="$VENV/setup.log"

install() {
  "$VENV/bin/python" -m pip install --quiet --upgrade pip
  "$VENV/bin/python" -m pip install --quiet --require-hashes -r "$LOCK"
  "$VENV/bin/python" -m pip install --quiet --no-deps -e .
}

setup() {
  # The set-up's own output (pip's and the build backend's warnings) goes to a log, shown only
  # when it fails: a newcomer's first `./dev.sh demo` shows the demo, not the build.
  local stamp="$VENV/.installed" wanted
  wanted=$(cat pyproject.toml "$LOCK" | cksum)
  if [ -x "$VENV/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$wanted" ]; then
    return
  fi
  echo "setting up $VENV (first run, or the dependencies changed; log: $SETUP_LOG)..."
  local log
  log=$(mktemp)
  if ! { [ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"; } >"$log" 2>&1 \
    || ! install >>"$log" 2>&1; then
    cat "$log" >&2
    echo "set-up failed (the output above is kept in ${SETUP_LOG})" >&2
    mkdir -p "$VENV" && mv "$log" "$SETUP_LOG"
    exit 1
  fi
  mv "$log" "$SETUP_LOG"
  # The stamp holds a checksum of what the install was made from, so a pull or a branch switch
  # that changes either file installs again, and nothing else does.
  echo "$wanted" >"$stamp"
}

lock() {
  # uv resolves in a scratch venv of its own: it is a tool of this script, not a dependency.
  TOOLS=$(mktemp -d)
  trap 'rm -rf "$TOOLS"' EXIT
  "$PY" -m venv "$TOOLS"
  "$TOOLS/bin/python" -m pip install --quiet "$UV_VERSION"
  local compile=("$TOOLS/bin/uv" pip compile pyproject.toml --quiet --generate-hashes
    --python-version 3.11 --python-platform x86_64-unknown-linux-gnu
    --custom-compile-command './dev.sh lock')
  "${compile[@]}" --extra dev --extra postgres "$@" -o "$LOCK"
  "${compile[@]}" --extra postgres --constraint "$LOCK" --no-annotate -o "$RUNTIME_LOCK"
  echo "wrote $LOCK (./dev.sh installs it) and $RUNTIME_LOCK (the Dockerfile installs it)"
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

ensure_chromium() {
  # The dashboard's browser test drives Debian's chromium through its chromedriver.
  if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then
    return
  fi
  if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    echo "installing chromium for the dashboard's browser test (apt-get)..."
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
  else
    echo "warning: chromium not found; install 'chromium chromium-driver' for the browser test" >&2
  fi
}

ensure_espeak() {
  # The voice-reply tests speak through a real local engine (tts.provider: command).
  if command -v espeak-ng >/dev/null; then
    return
  fi
  if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    echo "installing espeak-ng for the voice-reply tests (apt-get)..."
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq espeak-ng >/dev/null
  else
    echo "warning: espeak-ng not found; install 'espeak-ng' for the voice-reply tests" >&2
  fi
}

MCP_SERVERS=.mcp-servers
MCP_PINS=tests/fixtures/mcp_servers/reference

ensure_mcp_servers() {
  # The MCP integration tests run real third-party servers, pinned in $MCP_PINS: server-everything
  # from npm (node_modules under $MCP_SERVERS) and the PyPI reference servers (a venv of their
  # own, $MCP_SERVERS/py, so their `mcp` never meets ours). Both are ignored by git; nothing is
  # downloaded when the tests or the daemon run.
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
      echo "installing Node.js for the MCP server tests (apt-get)..."
      apt-get update -qq >/dev/null
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
    else
      echo "warning: node/npm not found; install 'nodejs npm' for the MCP server tests" >&2
      return
    fi
  fi
  local stamp="$MCP_SERVERS/.installed" wanted
  wanted=$(cat "$MCP_PINS/package.json" "$MCP_PINS/package-lock.json" "$MCP_PINS/requirements.txt" | cksum)
  if [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]; then
    echo "installing the pinned MCP servers for the tests into $MCP_SERVERS..."
    mkdir -p "$MCP_SERVERS"
    cp "$MCP_PINS/package.json" "$MCP_PINS/package-lock.json" "$MCP_SERVERS/"
    (cd "$MCP_SERVERS" && npm ci --silent --no-audit --no-fund)
    [ -x "$MCP_SERVERS/py/bin/python" ] || "$PY" -m venv "$MCP_SERVERS/py"
    "$MCP_SERVERS/py/bin/python" -m pip install --quiet -r "$MCP_PINS/requirements.txt"
    echo "$wanted" >"$stamp"
  fi
}

export NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost

case "${1:-}" in
  demo)
    setup
    shift
    # From the checkout (-m puts it on sys.path): the emulators in sandbox/ are not installed.
    exec "$VENV/bin/python" -m gateway.cli.main demo "$@"
    ;;
  test)
    setup
    ensure_postgres
    ensure_chromium
    ensure_espeak
    ensure_mcp_servers
    shift
    "$VENV/bin/ruff" check .
    "$VENV/bin/ruff" format --check .
    "$VENV/bin/mypy" agent gateway plugins sandbox bench
    "$VENV/bin/lint-imports"
    # Two workers (pytest-xdist); HERMES_TEST_WORKERS=0 runs the tests in this process.
    exec "$VENV/bin/python" -m pytest -q -n "${HERMES_TEST_WORKERS:-2}" "$@"
    ;;
  lock)
    shift
    lock "$@"
    ;;
  *)
    echo "usage: ./dev.sh demo | ./dev.sh test | ./dev.sh lock" >&2
    exit 2
    ;;
esac
