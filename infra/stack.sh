#!/usr/bin/env bash
# Tidemark's local stack without Docker: Redis, one Apache Kafka node (KRaft, broker + controller)
# and Apicurio Registry (Confluent-compatible API, schemas stored in Kafka).
#
#   bash infra/stack.sh up | down [--purge] | reset | status | logs [component] [-n N] | fetch
#   bash infra/stack.sh topics <kafka-topics args>      (TopicCommand against the local broker)
#   bash infra/stack.sh --help
#
# Jars and the registry come from Maven Central into a cache outside the repository
# (${TIDEMARK_CACHE:-~/.cache/tidemark}); data, logs and pid files live in <repo>/.local/.
# See infra/README.md.
set -euo pipefail

INFRA_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$INFRA_DIR/.." && pwd -P)"
LOCAL="$ROOT/.local"
RUN_DIR="$LOCAL/run"
LOG_DIR="$LOCAL/logs"
STACK_ENV="$LOCAL/stack.env"

CACHE="${TIDEMARK_CACHE:-${HOME:-/tmp}/.cache/tidemark}"
M2_REPO="${TIDEMARK_M2_REPO:-$CACHE/m2}"
KAFKA_VERSION="${TIDEMARK_KAFKA_VERSION:-4.1.1}"
REGISTRY_VERSION="${TIDEMARK_REGISTRY_VERSION:-3.3.3}"
KAFKA_HOME="$CACHE/kafka-$KAFKA_VERSION"
REGISTRY_HOME="$CACHE/apicurio-registry-$REGISTRY_VERSION"

KAFKA_PORT="${TIDEMARK_KAFKA_PORT:-19092}"
KAFKA_CONTROLLER_PORT="${TIDEMARK_KAFKA_CONTROLLER_PORT:-19093}"
# Second listener for network-fault tests: the broker listens on PROXIED_PORT and advertises
# PROXY_PORT, where a test's TCP proxy forwards to PROXIED_PORT. Set TIDEMARK_KAFKA_PROXY_PORT=off
# to leave it out.
KAFKA_PROXIED_PORT="${TIDEMARK_KAFKA_PROXIED_PORT:-19094}"
KAFKA_PROXY_PORT="${TIDEMARK_KAFKA_PROXY_PORT:-19095}"
REGISTRY_PORT="${TIDEMARK_REGISTRY_PORT:-18080}"
REGISTRY_MGMT_PORT="${TIDEMARK_REGISTRY_MGMT_PORT:-19000}"
REDIS_PORT="${TIDEMARK_REDIS_PORT:-16379}"

KAFKA_TIMEOUT="${TIDEMARK_KAFKA_TIMEOUT:-90}"
REGISTRY_TIMEOUT="${TIDEMARK_REGISTRY_TIMEOUT:-150}"
REDIS_TIMEOUT="${TIDEMARK_REDIS_TIMEOUT:-15}"
REGISTRY_STOP_TIMEOUT="${TIDEMARK_REGISTRY_STOP_TIMEOUT:-45}"
KAFKA_STOP_TIMEOUT="${TIDEMARK_KAFKA_STOP_TIMEOUT:-45}"
KAFKA_NODE_ID=1
# Apicurio's kafkasql start-up waits out several consumer polls on its (normally empty) snapshots
# topic; its default 5000 ms poll makes that ~20 s on every start. 1000 ms takes ~15 s off; the
# journal itself is read to the end regardless (a bootstrap marker ends the replay).
REGISTRY_POLL_MS="${TIDEMARK_REGISTRY_POLL_MS:-1000}"

# ---------------------------------------------------------------------------------------------
# small helpers

say() { printf '%s\n' "$*"; }
warn() { printf 'stack: %s\n' "$*" >&2; }
die() {
  printf 'stack: error: %s\n' "$*" >&2
  exit 1
}

now_ms() {
  local t="${EPOCHREALTIME/./}"
  echo $((t / 1000))
}
secs_since() { awk -v a="$1" -v b="$(now_ms)" 'BEGIN { printf "%.1f", (b - a) / 1000 }'; }

valid_port() { [[ "$1" =~ ^[0-9]+$ ]] && ((10#$1 >= 1 && 10#$1 <= 65535)); }

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# "pid=123 (java …)" for whoever listens on 127.0.0.1:<port>, if ss can tell.
port_owner() {
  local line pid
  line="$(ss -Hltnp "sport = :$1" 2>/dev/null | head -n 1 || true)"
  pid="$(sed -n 's/.*pid=\([0-9]*\).*/\1/p' <<<"$line" | head -n 1)"
  if [[ -n "$pid" ]]; then
    printf 'pid %s: %s' "$pid" "$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-160)"
  else
    printf 'an unknown process'
  fi
}

show_log_tail() {
  local log="$1" n="${2:-40}"
  if [[ -s "$log" ]]; then
    printf -- '--- last %s lines of %s ---\n' "$n" "$log" >&2
    tail -n "$n" "$log" | sed 's/^/  | /' >&2
    printf -- '---\n' >&2
  else
    printf '(%s is empty or missing)\n' "$log" >&2
  fi
}

rotate_log() {
  local log="$1"
  if [[ -s "$log" ]]; then mv -f "$log" "$log.1"; fi
  : >"$log"
}

# In a subshell about to start a long-lived process: close every descriptor above 2 (our locks,
# and whatever the caller's caller left open, e.g. the write end of a pipe someone waits on).
close_fds() {
  local fd n
  for fd in /proc/"$BASHPID"/fd/*; do
    n="${fd##*/}"
    if [[ "$n" =~ ^[0-9]+$ ]] && ((n > 2)); then eval "exec $n>&-" 2>/dev/null || true; fi
  done
  return 0
}

pid_file() { echo "$RUN_DIR/$1.pid"; }
log_file() { echo "$LOG_DIR/$1.log"; }

cmdline_of() { tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null || true; }

# Is <pid> our process for <component>? Java processes carry -Dtidemark.component and
# -Dtidemark.home; Redis is recognised by its name, port and working directory.
is_ours() {
  local comp="$1" pid="$2" cmd
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  cmd="$(cmdline_of "$pid")"
  case "$comp" in
    redis)
      [[ "$cmd" == *redis-server*":$REDIS_PORT"* ]] || return 1
      [[ "$(readlink "/proc/$pid/cwd" 2>/dev/null || true)" == "$LOCAL/redis" ]]
      ;;
    *)
      [[ "$cmd" == *"-Dtidemark.component=$comp -Dtidemark.home=$LOCAL "* ]]
      ;;
  esac
}

# Prints the pid of our live <component> process, or nothing. Cleans a stale pid file; finds our
# process by its command line when the pid file is gone.
find_pid() {
  local comp="$1" file pid cand
  file="$(pid_file "$comp")"
  if [[ -f "$file" ]]; then
    pid="$(tr -dc '0-9' <"$file" || true)"
    if is_ours "$comp" "$pid"; then
      echo "$pid"
      return 0
    fi
    rm -f "$file"
    [[ "${QUIET_STALE:-0}" == 1 ]] || warn "removed stale pid file for $comp (pid ${pid:-?} is gone)"
  fi
  local pattern
  case "$comp" in
    redis) pattern='redis-server' ;;
    *) pattern="-Dtidemark.component=$comp -Dtidemark.home=" ;;
  esac
  for cand in $(pgrep -f -- "$pattern" 2>/dev/null || true); do
    if is_ours "$comp" "$cand"; then
      mkdir -p "$RUN_DIR"
      echo "$cand" >"$file"
      echo "$cand"
      return 0
    fi
  done
  return 0
}

wait_pid_exit() {
  local pid="$1" timeout_s="$2" deadline
  deadline=$(($(now_ms) + timeout_s * 1000))
  while kill -0 "$pid" 2>/dev/null; do
    # a zombie (not yet reaped) counts as gone
    [[ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || echo Z)" == Z ]] && return 0
    (($(now_ms) < deadline)) || return 1
    sleep 0.2
  done
  return 0
}

rss_of() {
  local kb
  kb="$(awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || true)"
  if [[ -n "$kb" ]]; then echo "$((kb / 1024)) MB"; else echo "-"; fi
}

java_major() {
  local v
  v="$("$1" -version 2>&1 | sed -n 's/.*version "\([^"]*\)".*/\1/p' | head -n 1)"
  [[ -n "$v" ]] || {
    echo 0
    return
  }
  if [[ "$v" == 1.* ]]; then v="${v#1.}"; fi
  v="${v%%[.+-]*}"
  [[ "$v" =~ ^[0-9]+$ ]] && echo "$v" || echo 0
}

# Prints the path of a java whose major version is >= $1 (the newest found), or fails.
find_java() {
  local min="$1" override="${2:-}" best="" best_v=0 cand v
  if [[ -n "$override" ]]; then
    cand="$override/bin/java"
    [[ -x "$cand" ]] || die "$override/bin/java does not exist (from ${3:-the override})"
    v="$(java_major "$cand")"
    ((v >= min)) || die "$cand is Java $v; Java >= $min is needed"
    echo "$cand"
    return 0
  fi
  local -a cands=()
  if command -v java >/dev/null 2>&1; then cands+=("$(command -v java)"); fi
  if [[ -n "${JAVA_HOME:-}" ]]; then cands+=("$JAVA_HOME/bin/java"); fi
  for cand in /usr/lib/jvm/*/bin/java /opt/java/*/bin/java /opt/*/bin/java; do
    [[ -x "$cand" ]] && cands+=("$cand")
  done
  for cand in "${cands[@]}"; do
    [[ -x "$cand" ]] || continue
    v="$(java_major "$cand")"
    if ((v >= min && v > best_v)); then
      best="$cand"
      best_v="$v"
      # the default java is good enough for Kafka: no need to look further
      [[ "$min" -lt 21 && "$cand" == "$(command -v java 2>/dev/null || true)" ]] && break
    fi
  done
  [[ -n "$best" ]] || return 1
  echo "$best"
}

kafka_java() {
  find_java 17 "${TIDEMARK_KAFKA_JAVA_HOME:-}" TIDEMARK_KAFKA_JAVA_HOME ||
    die "no Java >= 17 found (java on PATH, \$JAVA_HOME, /usr/lib/jvm/*); install one: apt-get install -y openjdk-17-jre-headless"
}

registry_java() {
  find_java 21 "${JAVA21_HOME:-}" JAVA21_HOME ||
    die "Apicurio Registry $REGISTRY_VERSION needs Java >= 21 and none was found (looked at java on PATH, \$JAVA_HOME, /usr/lib/jvm/*/bin/java). Install a JDK 21+ and/or set JAVA21_HOME=/path/to/jdk"
}

http_code() {
  curl -s -o /dev/null -w '%{http_code}' --connect-timeout 1 --max-time "${2:-3}" "$1" 2>/dev/null || true
}

# ---------------------------------------------------------------------------------------------
# locking (one stack.sh at a time per checkout; one fetch at a time per cache)

lock_stack() {
  mkdir -p "$RUN_DIR" "$LOG_DIR"
  exec 8>"$RUN_DIR/.stack.lock"
  if ! flock -n 8; then
    say "another stack.sh is running in this checkout; waiting for it…"
    flock -w 600 8 || die "timed out waiting for $RUN_DIR/.stack.lock"
  fi
}

lock_cache() {
  mkdir -p "$CACHE"
  exec 7>"$CACHE/.fetch.lock"
  if ! flock -n 7; then
    say "another fetch is filling $CACHE; waiting for it…"
    flock -w 900 7 || die "timed out waiting for $CACHE/.fetch.lock"
  fi
}

# ---------------------------------------------------------------------------------------------
# fetch: Kafka jars and the Apicurio Registry distribution, into the cache

kafka_stamp() {
  printf 'kafka %s\n%s\n' "$KAFKA_VERSION" "$(sha256sum "$INFRA_DIR/kafka/pom.xml" | cut -d' ' -f1)"
}

kafka_cached() { [[ -f "$KAFKA_HOME/.complete" && "$(cat "$KAFKA_HOME/.complete")" == "$(kafka_stamp)" ]]; }
registry_cached() { [[ -f "$REGISTRY_HOME/.complete" && -f "$REGISTRY_HOME/quarkus-run.jar" ]]; }

need_mvn() {
  command -v mvn >/dev/null 2>&1 ||
    die "Maven (mvn) is needed to fetch the stack's artifacts: apt-get install -y maven (or run scripts/bootstrap.sh)"
}

mvn_q() {
  # shellcheck disable=SC2068
  mvn -B -q -Dstyle.color=never -Dmaven.repo.local="$M2_REPO" -f "$INFRA_DIR/kafka/pom.xml" "$@"
}

fetch_kafka() {
  kafka_cached && return 0
  need_mvn
  local t0 tmp out
  t0="$(now_ms)"
  say "resolving Kafka $KAFKA_VERSION jars into $KAFKA_HOME (first run downloads ~45 MB)…"
  tmp="$CACHE/.kafka-$KAFKA_VERSION.tmp.$$"
  rm -rf "$tmp"
  mkdir -p "$tmp/libs"
  if ! out="$(mvn_q -Dkafka.version="$KAFKA_VERSION" dependency:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$tmp/libs" 2>&1)"; then
    rm -rf "$tmp"
    printf '%s\n' "$out" | tail -n 40 >&2
    die "could not resolve Kafka $KAFKA_VERSION from Maven Central (see above)"
  fi
  [[ -f "$tmp/libs/kafka_2.13-$KAFKA_VERSION.jar" ]] || die "kafka_2.13-$KAFKA_VERSION.jar missing after resolution"
  # the logging trap: exactly one SLF4J binding, and it must be log4j-slf4j2-impl
  local bindings
  bindings="$(find "$tmp/libs" -maxdepth 1 -name '*.jar' -printf '%f\n' |
    grep -E '^(log4j-slf4j2?-impl|slf4j-(simple|nop|jdk14|jdk-platform-logging|reload4j|log4j12)|logback-classic)-' || true)"
  if [[ "$(printf '%s\n' "$bindings" | grep -c .)" != 1 || "$bindings" != log4j-slf4j2-impl-* ]]; then
    rm -rf "$tmp"
    die "expected exactly one SLF4J binding (log4j-slf4j2-impl) among Kafka's jars, found: ${bindings:-none}"
  fi
  rm -rf "$KAFKA_HOME"
  mv "$tmp" "$KAFKA_HOME"
  kafka_stamp >"$KAFKA_HOME/.complete"
  say "kafka jars ready in $(secs_since "$t0")s ($(ls "$KAFKA_HOME/libs" | wc -l) jars, $(du -sh "$KAFKA_HOME/libs" | cut -f1))"
}

fetch_registry() {
  registry_cached && return 0
  need_mvn
  local t0 tmp out tarball coord
  t0="$(now_ms)"
  coord="io.apicurio:apicurio-registry-app:$REGISTRY_VERSION:tar.gz:all"
  say "fetching Apicurio Registry $REGISTRY_VERSION into $REGISTRY_HOME (first run downloads ~160 MB)…"
  tmp="$CACHE/.apicurio-$REGISTRY_VERSION.tmp.$$"
  rm -rf "$tmp"
  mkdir -p "$tmp/dl" "$tmp/dist"
  if ! out="$(mvn_q dependency:copy -Dartifact="$coord" -DoutputDirectory="$tmp/dl" 2>&1)"; then
    rm -rf "$tmp"
    printf '%s\n' "$out" | tail -n 40 >&2
    die "could not fetch $coord from Maven Central (see above)"
  fi
  tarball="$(ls "$tmp"/dl/*.tar.gz 2>/dev/null | head -n 1)"
  [[ -n "$tarball" ]] || die "no tarball after fetching $coord"
  tar -xzf "$tarball" -C "$tmp/dist" || die "could not extract $tarball"
  [[ -f "$tmp/dist/quarkus-run.jar" ]] || die "quarkus-run.jar not at the root of $coord"
  rm -rf "$REGISTRY_HOME"
  mv "$tmp/dist" "$REGISTRY_HOME"
  rm -rf "$tmp"
  # the extracted copy is the cache; drop the tarball from our private Maven repository
  if [[ -z "${TIDEMARK_M2_REPO:-}" ]]; then
    rm -f "$M2_REPO/io/apicurio/apicurio-registry-app/$REGISTRY_VERSION/"*.tar.gz
  fi
  echo "$coord" >"$REGISTRY_HOME/.complete"
  say "registry distribution ready in $(secs_since "$t0")s ($(du -sh "$REGISTRY_HOME" | cut -f1))"
}

fetch_all() {
  if kafka_cached && registry_cached; then return 0; fi
  lock_cache
  fetch_kafka
  fetch_registry
}

# ---------------------------------------------------------------------------------------------
# readiness probes

redis_ping() {
  local reply=""
  {
    exec 3<>"/dev/tcp/127.0.0.1/$REDIS_PORT" &&
      printf 'PING\r\n' >&3 &&
      IFS= read -r -t 2 reply <&3
  } 2>/dev/null || true
  { exec 3>&-; } 2>/dev/null || true
  [[ "$reply" == "+PONG"* ]]
}

kafka_probe() {
  port_open "$KAFKA_PORT" || return 1
  node "$INFRA_DIR/kafka/probe.mjs" 127.0.0.1 "$KAFKA_PORT" "$KAFKA_NODE_ID" 3000 >/dev/null 2>&1
}

registry_probe() {
  port_open "$REGISTRY_MGMT_PORT" || return 1
  [[ "$(http_code "http://127.0.0.1:$REGISTRY_MGMT_PORT/health/ready")" == 200 ]] || return 1
  [[ "$(http_code "http://127.0.0.1:$REGISTRY_PORT/apis/ccompat/v7/subjects")" == 200 ]]
}

# wait_ready <component> <pid> <timeout s> <probe fn>: 0 ready, 1 process died, 2 timed out
wait_ready() {
  local comp="$1" pid="$2" timeout_s="$3" probe="$4" deadline
  deadline=$(($(now_ms) + timeout_s * 1000))
  while :; do
    if ! kill -0 "$pid" 2>/dev/null; then return 1; fi
    if "$probe"; then return 0; fi
    (($(now_ms) < deadline)) || return 2
    sleep 0.3
  done
}

# ---------------------------------------------------------------------------------------------
# components

ports_of() {
  case "$1" in
    redis) echo "$REDIS_PORT" ;;
    kafka)
      echo "$KAFKA_PORT $KAFKA_CONTROLLER_PORT"
      if [[ "$KAFKA_PROXY_PORT" != off ]]; then echo "$KAFKA_PROXIED_PORT"; fi
      ;;
    registry) echo "$REGISTRY_PORT $REGISTRY_MGMT_PORT" ;;
  esac
}

probe_of() {
  case "$1" in
    redis) echo redis_ping ;;
    kafka) echo kafka_probe ;;
    registry) echo registry_probe ;;
  esac
}

timeout_of() {
  case "$1" in
    redis) echo "$REDIS_TIMEOUT" ;;
    kafka) echo "$KAFKA_TIMEOUT" ;;
    registry) echo "$REGISTRY_TIMEOUT" ;;
  esac
}

ensure_ports_free() {
  local comp="$1" p
  for p in $(ports_of "$comp"); do
    if port_open "$p"; then
      die "cannot start $comp: 127.0.0.1:$p is already in use by $(port_owner "$p"), which is not this checkout's $comp. Stop it, or pick other ports (TIDEMARK_*_PORT, see infra/README.md)."
    fi
  done
}

# Is our <component> already up? 0: up and healthy (nothing to do); 1: not running (start it).
# A live process that does not answer yet (starting, or still exiting after an interrupted down)
# is waited for; if it exits we start a new one, if it neither answers nor exits we fail.
already_up() {
  local comp="$1" pid probe timeout_s rc=0
  pid="$(find_pid "$comp")"
  [[ -n "$pid" ]] || return 1
  probe="$(probe_of "$comp")"
  if "$probe"; then
    say "$comp already running (pid $pid)"
    return 0
  fi
  timeout_s="$(timeout_of "$comp")"
  say "$comp (pid $pid) is running but not answering yet; waiting up to ${timeout_s}s…"
  wait_ready "$comp" "$pid" "$timeout_s" "$probe" || rc=$?
  case "$rc" in
    0)
      say "$comp is ready (pid $pid)"
      return 0
      ;;
    1)
      say "that $comp process exited; starting a new one"
      rm -f "$(pid_file "$comp")"
      return 1
      ;;
    *)
      show_log_tail "$(log_file "$comp")"
      die "$comp (pid $pid) is alive but did not answer within ${timeout_s}s (stopped? hung?). Run 'bash infra/stack.sh down' and try again."
      ;;
  esac
}

# start_detached <component> <workdir> <command…>: detached (own session, no terminal, stdin /dev/null),
# output to .local/logs/<component>.log; prints the pid.
start_detached() {
  local comp="$1" workdir="$2"
  shift 2
  local file log
  file="$(pid_file "$comp")"
  log="$(log_file "$comp")"
  rm -f "$file"
  (
    cd "$workdir"
    close_fds
    # shellcheck disable=SC2016
    exec setsid bash -c 'echo $$ >"$0"; exec "$@"' "$file" "$@" >>"$log" 2>&1 </dev/null
  ) &
  for _ in $(seq 1 50); do
    [[ -s "$file" ]] && break
    sleep 0.05
  done
  [[ -s "$file" ]] || die "$comp did not start (no pid file)"
  cat "$file"
}

wait_started() {
  local comp="$1" pid="$2" t0="$3" rc=0 timeout_s probe
  timeout_s="$(timeout_of "$comp")"
  probe="$(probe_of "$comp")"
  wait_ready "$comp" "$pid" "$timeout_s" "$probe" || rc=$?
  case "$rc" in
    0) say "$comp ready in $(secs_since "$t0")s" ;;
    1)
      rm -f "$(pid_file "$comp")"
      show_log_tail "$(log_file "$comp")"
      die "$comp exited during start-up (see the log above: $(log_file "$comp"))"
      ;;
    *)
      show_log_tail "$(log_file "$comp")"
      die "$comp (pid $pid) was not ready within ${timeout_s}s (see $(log_file "$comp")); it is left running for inspection: 'bash infra/stack.sh down' stops it"
      ;;
  esac
}

up_redis() {
  already_up redis && return 0
  command -v redis-server >/dev/null 2>&1 ||
    die "redis-server not found: apt-get install -y redis-server (or run scripts/bootstrap.sh)"
  ensure_ports_free redis
  local t0 log pidf
  t0="$(now_ms)"
  log="$(log_file redis)"
  pidf="$(pid_file redis)"
  mkdir -p "$LOCAL/redis"
  rm -f "$pidf"
  rotate_log "$log"
  say "starting redis on 127.0.0.1:$REDIS_PORT…"
  (cd "$LOCAL/redis" && close_fds && redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no \
    --daemonize yes --dir "$LOCAL/redis" --logfile "$log" --pidfile "$pidf" >>"$log" 2>&1 </dev/null) || {
    show_log_tail "$log"
    die "redis-server failed to start"
  }
  local pid=""
  for _ in $(seq 1 100); do
    pid="$(tr -dc '0-9' <"$pidf" 2>/dev/null || true)"
    [[ -n "$pid" ]] && break
    sleep 0.05
  done
  [[ -n "$pid" ]] || {
    show_log_tail "$log"
    die "redis-server started but wrote no pid file ($pidf)"
  }
  wait_started redis "$pid" "$t0"
}

kafka_server_properties() {
  local listeners="PLAINTEXT://127.0.0.1:$KAFKA_PORT,CONTROLLER://127.0.0.1:$KAFKA_CONTROLLER_PORT"
  local advertised="PLAINTEXT://127.0.0.1:$KAFKA_PORT"
  local protocols="PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
  if [[ "$KAFKA_PROXY_PORT" != off ]]; then
    listeners+=",PROXIED://127.0.0.1:$KAFKA_PROXIED_PORT"
    advertised+=",PROXIED://127.0.0.1:$KAFKA_PROXY_PORT"
    protocols+=",PROXIED:PLAINTEXT"
  fi
  cat <<EOF
# Generated by infra/stack.sh at every start; edit the script, not this file.
process.roles=broker,controller
node.id=$KAFKA_NODE_ID
controller.quorum.voters=$KAFKA_NODE_ID@127.0.0.1:$KAFKA_CONTROLLER_PORT
controller.listener.names=CONTROLLER
listeners=$listeners
advertised.listeners=$advertised
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=$protocols
log.dirs=$LOCAL/kafka/data
num.partitions=1
default.replication.factor=1
min.insync.replicas=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=5
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=5
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=false
delete.topic.enable=true
EOF
}

# kafka_java_cmd <java> <component> <jvm options> [log4j2 config]: sets KAFKA_CMD
kafka_java_cmd() {
  # shellcheck disable=SC2206
  KAFKA_CMD=("$1" "-Dtidemark.component=$2" "-Dtidemark.home=$LOCAL" $3
    "-Dlog4j2.configurationFile=$INFRA_DIR/kafka/${4:-log4j2.properties}" "-Dkafka.logs.dir=$LOG_DIR"
    -Djava.awt.headless=true -cp "$KAFKA_HOME/libs/*")
}

up_kafka() {
  already_up kafka && return 0
  ensure_ports_free kafka
  local java t0 props log data id pid
  java="$(kafka_java)"
  t0="$(now_ms)"
  log="$(log_file kafka)"
  data="$LOCAL/kafka/data"
  props="$LOCAL/kafka/server.properties"
  mkdir -p "$data"
  kafka_server_properties >"$props"
  rotate_log "$log"
  if [[ ! -f "$data/meta.properties" ]]; then
    if [[ ! -s "$LOCAL/kafka/cluster.id" ]]; then
      # a Kafka Uuid: 16 random bytes, URL-safe base64 without padding, not starting with '-'
      while :; do
        id="$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')"
        [[ "$id" != -* && ${#id} == 22 ]] && break
      done
      echo "$id" >"$LOCAL/kafka/cluster.id"
    fi
    id="$(cat "$LOCAL/kafka/cluster.id")"
    say "formatting kafka storage (cluster $id)…"
    kafka_java_cmd "$java" kafka-format "-Xmx256m" log4j2-tools.properties
    if ! "${KAFKA_CMD[@]}" kafka.tools.StorageTool format -t "$id" -c "$props" --ignore-formatted >>"$log" 2>&1 </dev/null; then
      show_log_tail "$log"
      die "kafka storage format failed"
    fi
  fi
  kafka_java_cmd "$java" kafka "-Xms256m -Xmx768m -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent -XX:MaxInlineLevel=15 -XX:+ExitOnOutOfMemoryError"
  say "starting kafka $KAFKA_VERSION on 127.0.0.1:$KAFKA_PORT (controller :$KAFKA_CONTROLLER_PORT, $("$java" -version 2>&1 | head -n 1 | sed 's/.*version "\([^"]*\)".*/java \1/'))…"
  pid="$(start_detached kafka "$LOCAL/kafka" "${KAFKA_CMD[@]}" kafka.Kafka "$props")"
  wait_started kafka "$pid" "$t0"
}

up_registry() {
  already_up registry && return 0
  ensure_ports_free registry
  local java t0 pid
  java="$(registry_java)"
  t0="$(now_ms)"
  mkdir -p "$LOCAL/registry"
  rotate_log "$(log_file registry)"
  say "starting apicurio registry $REGISTRY_VERSION on 127.0.0.1:$REGISTRY_PORT (management :$REGISTRY_MGMT_PORT, java $(java_major "$java"), storage kafkasql)…"
  pid="$(start_detached registry "$LOCAL/registry" "$java" \
    "-Dtidemark.component=registry" "-Dtidemark.home=$LOCAL" \
    -Xmx512m -XX:+ExitOnOutOfMemoryError -Djava.io.tmpdir="$LOCAL/registry" \
    -Dquarkus.http.host=127.0.0.1 "-Dquarkus.http.port=$REGISTRY_PORT" \
    -Dquarkus.management.host=127.0.0.1 "-Dquarkus.management.port=$REGISTRY_MGMT_PORT" \
    -Dapicurio.storage.kind=kafkasql "-Dapicurio.kafkasql.bootstrap.servers=127.0.0.1:$KAFKA_PORT" \
    -Dapicurio.rules.global.compatibility=BACKWARD -Dapicurio.ccompat.use-canonical-hash=true \
    "-Dapicurio.kafkasql.consumer.poll.timeout=$REGISTRY_POLL_MS" \
    -jar "$REGISTRY_HOME/quarkus-run.jar")"
  wait_started registry "$pid" "$t0"
}

write_env() {
  local tmp="$STACK_ENV.tmp.$$"
  {
    echo "KAFKA_BROKERS=127.0.0.1:$KAFKA_PORT"
    echo "SCHEMA_REGISTRY_URL=http://127.0.0.1:$REGISTRY_PORT/apis/ccompat/v7"
    echo "REDIS_URL=redis://127.0.0.1:$REDIS_PORT"
  } >"$tmp"
  mv -f "$tmp" "$STACK_ENV"
}

stop_component() {
  local comp="$1" timeout_s="$2" pid
  pid="$(QUIET_STALE=1 find_pid "$comp")"
  if [[ -z "$pid" ]]; then
    say "$comp is not running"
    rm -f "$(pid_file "$comp")"
    return 0
  fi
  local t0
  t0="$(now_ms)"
  say "stopping $comp (pid $pid)…"
  # a SIGSTOPped process (fault tests) would never act on SIGTERM
  kill -CONT "$pid" 2>/dev/null || true
  if [[ "$comp" == redis ]] && command -v redis-cli >/dev/null 2>&1; then
    timeout 5 redis-cli -h 127.0.0.1 -p "$REDIS_PORT" shutdown nosave >/dev/null 2>&1 || kill -TERM "$pid" 2>/dev/null || true
  else
    kill -TERM "$pid" 2>/dev/null || true
  fi
  if wait_pid_exit "$pid" "$timeout_s"; then
    say "$comp stopped in $(secs_since "$t0")s"
  else
    warn "$comp (pid $pid) did not exit within ${timeout_s}s of SIGTERM; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    wait_pid_exit "$pid" 10 || die "$comp (pid $pid) survived SIGKILL"
    say "$comp killed"
  fi
  rm -f "$(pid_file "$comp")"
}

# ---------------------------------------------------------------------------------------------
# commands

status_line() {
  local comp="$1" addr="$2" pid state rss="-" p
  pid="$(QUIET_STALE=1 find_pid "$comp")"
  if [[ -n "$pid" ]]; then
    if "$(probe_of "$comp")"; then state="up"; else state="starting/not answering"; fi
    rss="$(rss_of "$pid")"
  else
    pid="-"
    state="down"
    for p in $(ports_of "$comp"); do
      if port_open "$p"; then
        state="down (port $p taken by $(port_owner "$p" | cut -c1-60))"
        break
      fi
    done
  fi
  printf '%-9s %-8s %-8s %-52s %s\n' "$comp" "$pid" "$rss" "$addr" "$state"
}

status_table() {
  mkdir -p "$RUN_DIR"
  printf '%-9s %-8s %-8s %-52s %s\n' COMPONENT PID RSS ADDRESS STATE
  status_line redis "redis://127.0.0.1:$REDIS_PORT"
  local kaddr="127.0.0.1:$KAFKA_PORT (controller :$KAFKA_CONTROLLER_PORT)"
  status_line kafka "$kaddr"
  status_line registry "http://127.0.0.1:$REGISTRY_PORT/apis/ccompat/v7 (mgmt :$REGISTRY_MGMT_PORT)"
}

cmd_status() {
  status_table
  if [[ -f "$STACK_ENV" ]]; then
    say ""
    say "$STACK_ENV:"
    sed 's/^/  /' "$STACK_ENV"
  fi
  return 0
}

cmd_up() {
  local t0
  t0="$(now_ms)"
  for p in KAFKA_PORT KAFKA_CONTROLLER_PORT REGISTRY_PORT REGISTRY_MGMT_PORT REDIS_PORT; do
    valid_port "${!p}" || die "TIDEMARK_$p=${!p} is not a port number"
  done
  if [[ "$KAFKA_PROXY_PORT" != off ]]; then
    valid_port "$KAFKA_PROXY_PORT" || die "TIDEMARK_KAFKA_PROXY_PORT=$KAFKA_PROXY_PORT is not a port number (or 'off')"
    valid_port "$KAFKA_PROXIED_PORT" || die "TIDEMARK_KAFKA_PROXIED_PORT=$KAFKA_PROXIED_PORT is not a port number"
  fi
  command -v node >/dev/null 2>&1 || die "node is needed (Kafka readiness probe)"
  command -v curl >/dev/null 2>&1 || die "curl is needed (registry readiness probe): apt-get install -y curl"
  lock_stack
  fetch_all
  up_redis
  up_kafka
  up_registry
  write_env
  say ""
  status_table
  say ""
  cat "$STACK_ENV"
  say "stack up in $(secs_since "$t0")s"
}

cmd_down() {
  local purge=0 arg
  for arg in "$@"; do
    case "$arg" in
      --purge | -p) purge=1 ;;
      *) die "down: unknown option $arg (only --purge)" ;;
    esac
  done
  lock_stack
  local t0
  t0="$(now_ms)"
  rm -f "$STACK_ENV"
  stop_component registry "$REGISTRY_STOP_TIMEOUT"
  stop_component kafka "$KAFKA_STOP_TIMEOUT"
  stop_component redis 10
  if ((purge)); then
    rm -rf "$LOCAL/kafka" "$LOCAL/redis" "$LOCAL/registry" "$LOG_DIR"
    say "purged $LOCAL/{kafka,redis,registry,logs}: the next up starts with empty data"
  fi
  say "stack down in $(secs_since "$t0")s"
}

cmd_logs() {
  local n=40 comps=() arg
  while (($#)); do
    case "$1" in
      -n)
        n="${2:?-n needs a number}"
        shift 2
        ;;
      redis | kafka | registry)
        comps+=("$1")
        shift
        ;;
      *) die "logs: unknown argument $1 (components: redis kafka registry; -n N)" ;;
    esac
  done
  ((${#comps[@]})) || comps=(redis kafka registry)
  for arg in "${comps[@]}"; do
    local log
    log="$(log_file "$arg")"
    printf '==> %s (%s) <==\n' "$arg" "$log"
    if [[ -f "$log" ]]; then tail -n "$n" "$log"; else echo "(no log yet)"; fi
    echo
  done
}

cmd_fetch() {
  local t0
  t0="$(now_ms)"
  if kafka_cached && registry_cached; then
    say "stack artifacts already cached in $CACHE (kafka $KAFKA_VERSION, apicurio registry $REGISTRY_VERSION)"
    return 0
  fi
  fetch_all
  say "stack artifacts cached in $CACHE in $(secs_since "$t0")s"
}

# fetch also checks the JVMs, so a bootstrap fails early rather than at the first `up`
check_javas() {
  local kj rj
  kj="$(kafka_java)"
  rj="$(registry_java)"
  say "java for kafka: $kj (java $(java_major "$kj")); for the registry: $rj (java $(java_major "$rj"))"
}

cmd_topics() {
  kafka_cached || die "kafka jars not cached yet: bash infra/stack.sh fetch"
  local java
  java="$(kafka_java)"
  kafka_java_cmd "$java" kafka-tool "-Xmx256m" log4j2-tools.properties
  exec "${KAFKA_CMD[@]}" org.apache.kafka.tools.TopicCommand --bootstrap-server "127.0.0.1:$KAFKA_PORT" "$@"
}

usage() {
  cat <<EOF
usage: bash infra/stack.sh <command>

  up              start Redis, Kafka $KAFKA_VERSION (KRaft) and Apicurio Registry $REGISTRY_VERSION,
                  wait until each is ready, write .local/stack.env; does nothing if already up
  down [--purge]  stop registry, then Kafka, then Redis (keeps data; --purge deletes it)
  reset           same as: down --purge
  status          table of components, pids, addresses and states (always exits 0)
  logs [comp] [-n N]  tail of each log (.local/logs/*.log), default 40 lines
  fetch           download the Kafka jars and the registry into the cache, start nothing
  topics ARGS     kafka-topics against the local broker, e.g. topics --list

ports (env):  TIDEMARK_KAFKA_PORT=$KAFKA_PORT  TIDEMARK_KAFKA_CONTROLLER_PORT=$KAFKA_CONTROLLER_PORT
              TIDEMARK_REGISTRY_PORT=$REGISTRY_PORT  TIDEMARK_REGISTRY_MGMT_PORT=$REGISTRY_MGMT_PORT
              TIDEMARK_REDIS_PORT=$REDIS_PORT
              TIDEMARK_KAFKA_PROXIED_PORT=$KAFKA_PROXIED_PORT  TIDEMARK_KAFKA_PROXY_PORT=$KAFKA_PROXY_PORT (or off)
cache:        TIDEMARK_CACHE=$CACHE
java:         Kafka: java >= 17 (default java); registry: java >= 21 (JAVA21_HOME, or found in /usr/lib/jvm)
data/logs:    $LOCAL
EOF
}

main() {
  local cmd="${1:-}"
  [[ $# -gt 0 ]] && shift
  case "$cmd" in
    up) cmd_up "$@" ;;
    down) cmd_down "$@" ;;
    reset) cmd_down --purge ;;
    status) cmd_status ;;
    logs) cmd_logs "$@" ;;
    fetch)
      cmd_fetch
      check_javas
      ;;
    topics) cmd_topics "$@" ;;
    -h | --help | help) usage ;;
    "")
      usage >&2
      exit 2
      ;;
    *)
      warn "unknown command: $cmd"
      usage >&2
      exit 2
      ;;
  esac
}

main "$@"
