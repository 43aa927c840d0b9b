#!/usr/bin/env bash
# Three independent Redis nodes on 127.0.0.1:7001-7003 for developing an app locally, without
# Docker (the same nodes as redis-nodes.compose.yml next to it). Needs `redis-server` and
# `redis-cli` on PATH. Shipped in the package: bash node_modules/nestjs-redlock/docs/redis-nodes.sh
#
#   bash docs/redis-nodes.sh start    # starts them in the background, waits until each answers PING
#   bash docs/redis-nodes.sh status   # PING each
#   bash docs/redis-nodes.sh stop     # stops the ones it started (by the pids it recorded)
#
# LOCK_NODES=redis://127.0.0.1:7001,redis://127.0.0.1:7002,redis://127.0.0.1:7003
#
# No persistence (`--save '' --appendonly no`): a lock node only holds short-lived keys.
# Ports: REDIS_NODE_A_PORT, REDIS_NODE_B_PORT, REDIS_NODE_C_PORT (default 7001, 7002, 7003), the
# variables redis-nodes.compose.yml reads too: the same environment gives the same three nodes
# with or without Docker. REDIS_NODES_PORTS="7001 7002 7003 7004 7005" lists them all instead
# (any number of nodes; this script only). The state folder: REDIS_NODES_DIR (default:
# .redis-nodes/ in the current folder).
set -euo pipefail

PORTS=${REDIS_NODES_PORTS:-"${REDIS_NODE_A_PORT:-7001} ${REDIS_NODE_B_PORT:-7002} ${REDIS_NODE_C_PORT:-7003}"}
DIR=${REDIS_NODES_DIR:-"$PWD/.redis-nodes"}

ping() { redis-cli -h 127.0.0.1 -p "$1" ping 2>/dev/null || true; }

start() {
  command -v redis-server >/dev/null || {
    echo "redis-server is not on PATH (apt-get install redis-server, brew install redis)" >&2
    exit 1
  }
  mkdir -p "$DIR"
  for port in $PORTS; do
    if [ -f "$DIR/$port.pid" ] && kill -0 "$(cat "$DIR/$port.pid")" 2>/dev/null; then
      echo "127.0.0.1:$port already running (pid $(cat "$DIR/$port.pid"))"
      continue
    fi
    if [ -n "$(ping "$port")" ]; then
      echo "127.0.0.1:$port is taken by another server; pick free ports with REDIS_NODE_A_PORT, REDIS_NODE_B_PORT, REDIS_NODE_C_PORT" >&2
      exit 1
    fi
    redis-server --bind 127.0.0.1 --port "$port" --save '' --appendonly no \
      --dir "$DIR" --daemonize yes --pidfile "$DIR/$port.pid" --logfile "$DIR/$port.log"
  done
  for port in $PORTS; do
    for _ in $(seq 50); do
      [ "$(ping "$port")" = PONG ] && break
      sleep 0.1
    done
    [ "$(ping "$port")" = PONG ] || {
      echo "127.0.0.1:$port did not answer; see $DIR/$port.log" >&2
      exit 1
    }
    echo "127.0.0.1:$port up (pid $(cat "$DIR/$port.pid"))"
  done
  echo "LOCK_NODES=$(for p in $PORTS; do printf 'redis://127.0.0.1:%s,' "$p"; done | sed 's/,$//')"
}

stop() {
  for port in $PORTS; do
    pidfile="$DIR/$port.pid"
    [ -f "$pidfile" ] || continue
    pid=$(cat "$pidfile")
    if kill "$pid" 2>/dev/null; then
      for _ in $(seq 50); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
      done
      echo "127.0.0.1:$port stopped (pid $pid)"
    fi
    rm -f "$pidfile"
  done
}

status() {
  for port in $PORTS; do echo "127.0.0.1:$port $(ping "$port" | grep . || echo down)"; done
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *)
    echo "usage: $0 start|status|stop" >&2
    exit 2
    ;;
esac
