#!/usr/bin/env bash
# make cluster: a local 3-node nats-server cluster and two `pilotdesk serve
# --nats` relays on 127.0.0.1, for a person to try several relays sharing
# conversations (docs/operations.md). It prints the relays' URLs and token,
# and stops everything it started on Ctrl-C.
#
# Usage: scripts/cluster.sh [--dry-run]
#   --dry-run   write and check the nats-server configurations
#               (nats-server -t), print what would run, start nothing
#
# Environment (all optional):
#   CLUSTER_DIR           state: configs, JetStream data, logs, the secrets
#                         (default .tools/cluster; the history survives a
#                         restart of the cluster, rm -rf it to start afresh)
#   CLUSTER_CLIENT_PORTS  the nodes' client ports     (default 14222,14223,14224)
#   CLUSTER_ROUTE_PORTS   the nodes' cluster ports    (default 16222,16223,16224)
#   CLUSTER_HTTP_PORTS    the nodes' monitoring ports (default 18222,18223,18224)
#   CLUSTER_RELAY_PORTS   the relays' ports           (default 7421,7422)
#   CLUSTER_SERVE_FLAGS   more flags for both relays, e.g. "--agent script"
#   PILOTDESK_BIN         a pilotdesk binary to use instead of building one
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dry=0
case "${1:-}" in
--dry-run) dry=1 ;;
"") ;;
*)
	echo "usage: $0 [--dry-run]" >&2
	exit 2
	;;
esac

dir="${CLUSTER_DIR:-$root/.tools/cluster}"
IFS=, read -r -a client_ports <<<"${CLUSTER_CLIENT_PORTS:-14222,14223,14224}"
IFS=, read -r -a route_ports <<<"${CLUSTER_ROUTE_PORTS:-16222,16223,16224}"
IFS=, read -r -a http_ports <<<"${CLUSTER_HTTP_PORTS:-18222,18223,18224}"
IFS=, read -r -a relay_ports <<<"${CLUSTER_RELAY_PORTS:-7421,7422}"
read -r -a serve_flags <<<"${CLUSTER_SERVE_FLAGS:-}"
if ((${#client_ports[@]} != 3 || ${#route_ports[@]} != 3 || ${#http_ports[@]} != 3)); then
	echo "cluster: CLUSTER_CLIENT_PORTS, CLUSTER_ROUTE_PORTS and CLUSTER_HTTP_PORTS need three ports each" >&2
	exit 2
fi
if ((${#relay_ports[@]} < 1)); then
	echo "cluster: CLUSTER_RELAY_PORTS needs at least one port" >&2
	exit 2
fi
for p in "${client_ports[@]}" "${route_ports[@]}" "${http_ports[@]}" "${relay_ports[@]}"; do
	if ! [[ "$p" =~ ^[0-9]+$ ]] || ((p < 1 || p > 65535)); then
		echo "cluster: $p is not a port" >&2
		exit 2
	fi
done

mkdir -p "$dir"
chmod 700 "$dir"

# The relays' NATS password and the relays' token, made once and kept, so
# that a second run serves the same clients.
secrets="$dir/secrets"
if [[ ! -s "$secrets" ]]; then
	umask 077
	{
		echo "nats_password=$(head -c 18 /dev/urandom | base64 | tr '+/' '-_')"
		echo "relay_token=$(head -c 18 /dev/urandom | base64 | tr '+/' '-_')"
	} >"$secrets"
fi
nats_password="$(sed -n 's/^nats_password=//p' "$secrets")"
relay_token="$(sed -n 's/^relay_token=//p' "$secrets")"

server="$("$root/scripts/install-nats-server.sh")"

# The relay user may do what a relay does and nothing else: its subjects,
# the JetStream API, its KV buckets (history records, device tokens, spend,
# leases, owners, presence), flow control and its replies: the list the tests'
# clusters (natstest) give the relay user. A subject wildcard matches
# whole tokens only: $KV.pd_*.> would not mean what it seems.
publish='"pilotdesk.>", "$JS.API.>", "$KV.pd_meta.>", "$KV.pd_devices.>", "$KV.pd_spend.>", "$KV.pd_relays.>", "$KV.pd_owners.>", "$KV.pd_presence.>", "$JS.FC.>", "_INBOX.>"'
subscribe='"pilotdesk.>", "_INBOX.>"'

routes=""
for i in 0 1 2; do
	routes+="${routes:+, }nats-route://127.0.0.1:${route_ports[$i]}"
done
urls=""
for i in 0 1 2; do
	urls+="${urls:+,}nats://relay:${nats_password}@127.0.0.1:${client_ports[$i]}"
done

for i in 0 1 2; do
	n=$((i + 1))
	cat >"$dir/n$n.conf" <<EOF
# Node n$n of the local pilotdesk cluster (scripts/cluster.sh).
server_name: n$n
listen: 127.0.0.1:${client_ports[$i]}
http: 127.0.0.1:${http_ports[$i]}
jetstream {
  store_dir: "$dir/n$n"
  max_memory_store: 256MB
  max_file_store: 4GB
  limits { batch { max_inflight_per_stream: 1000, max_inflight_total: 5000 } }
  sync_interval: always
}
cluster {
  name: pilotdesk
  listen: 127.0.0.1:${route_ports[$i]}
  routes: [$routes]
}
accounts {
  PILOTDESK {
    jetstream: enabled
    users: [{ user: relay, password: "$nats_password",
      permissions: { publish: [$publish], subscribe: [$subscribe] } }]
  }
}
EOF
	chmod 600 "$dir/n$n.conf"
	if ! out="$("$server" -t -c "$dir/n$n.conf" 2>&1)"; then
		echo "cluster: nats-server refuses $dir/n$n.conf:" >&2
		echo "$out" >&2
		exit 1
	fi
done

relay_args() { # relay_args INDEX: the serve command line of relay INDEX
	local i=$1
	printf '%s\0' serve --nats "$urls" --listen "127.0.0.1:${relay_ports[$i]}" --token "$relay_token" \
		--data-dir "$dir/relay$((i + 1))" "${serve_flags[@]}"
}

if ((dry)); then
	echo "cluster: configurations checked: $dir/n1.conf $dir/n2.conf $dir/n3.conf"
	for i in 0 1 2; do
		echo "would run: $server -c $dir/n$((i + 1)).conf"
	done
	for i in "${!relay_ports[@]}"; do
		mapfile -d '' -t args < <(relay_args "$i")
		echo "would run: pilotdesk ${args[*]//$nats_password/***}"
	done
	exit 0
fi

bin="${PILOTDESK_BIN:-}"
if [[ -z "$bin" ]]; then
	# The ci tag leaves out the OpenGL driver: serve needs no window, and
	# the build takes seconds instead of minutes.
	echo "cluster: building pilotdesk" >&2
	(cd "$root" && go build -tags ci -o "$dir/pilotdesk" .)
	bin="$dir/pilotdesk"
fi

pids=()
names=()
stop() {
	trap - INT TERM EXIT
	echo
	echo "cluster: stopping"
	# The relays first (they close their turns and flush), then the nodes.
	local i
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
		[[ -n "${pids[$i]}" ]] || continue
		kill -TERM "${pids[$i]}" 2>/dev/null || true
		for _ in $(seq 100); do
			kill -0 "${pids[$i]}" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "${pids[$i]}" 2>/dev/null; then
			echo "cluster: ${names[$i]} did not stop in 10 s; killing it"
			kill -KILL "${pids[$i]}" 2>/dev/null || true
		fi
		wait "${pids[$i]}" 2>/dev/null || true
	done
	echo "cluster: stopped"
}
trap stop EXIT
trap 'exit 0' INT TERM

healthy() { # healthy URL TIMEOUT_S NAME PID
	local deadline=$((SECONDS + $2))
	while ((SECONDS < deadline)); do
		if ! kill -0 "$4" 2>/dev/null; then
			echo "cluster: $3 exited; its log:" >&2
			return 1
		fi
		if curl -fsS -o /dev/null --max-time 2 "$1" 2>/dev/null; then
			return 0
		fi
		sleep 0.2
	done
	echo "cluster: $3 not healthy after $2 s ($1); its log:" >&2
	return 1
}

for i in 0 1 2; do
	n=$((i + 1))
	# setsid: a process group of its own, so that Ctrl-C reaches this
	# script alone and the relays stop before the nodes (stop above).
	setsid "$server" -c "$dir/n$n.conf" >>"$dir/n$n.log" 2>&1 &
	pids+=($!)
	names+=("nats-server n$n")
done
for i in 0 1 2; do
	n=$((i + 1))
	# /healthz answers 200 once the node's JetStream is up and current.
	if ! healthy "http://127.0.0.1:${http_ports[$i]}/healthz" 60 "nats-server n$n" "${pids[$i]}"; then
		tail -n 30 "$dir/n$n.log" >&2
		exit 1
	fi
done
echo "cluster: 3 nats-server nodes up: nats://127.0.0.1:${client_ports[0]},nats://127.0.0.1:${client_ports[1]},nats://127.0.0.1:${client_ports[2]}"

for i in "${!relay_ports[@]}"; do
	n=$((i + 1))
	mkdir -p "$dir/relay$n"
	mapfile -d '' -t args < <(relay_args "$i")
	setsid "$bin" "${args[@]}" >>"$dir/relay$n.log" 2>&1 &
	pids+=($!)
	names+=("relay $n")
done
for i in "${!relay_ports[@]}"; do
	n=$((i + 1))
	if ! healthy "http://127.0.0.1:${relay_ports[$i]}/healthz" 60 "relay $n" "${pids[$((3 + i))]}"; then
		tail -n 30 "$dir/relay$n.log" >&2
		exit 1
	fi
done

echo
for i in "${!relay_ports[@]}"; do
	echo "relay $((i + 1)): ws://127.0.0.1:${relay_ports[$i]}/ws  (log: $dir/relay$((i + 1)).log)"
done
echo "token: $relay_token"
echo "monitoring: http://127.0.0.1:${http_ports[0]}/jsz  http://127.0.0.1:${http_ports[1]}/jsz  http://127.0.0.1:${http_ports[2]}/jsz"
echo "try: pilotdesk chat --connect ws://127.0.0.1:${relay_ports[0]}/ws --token $relay_token"
echo "     and the same conversation from the other relay (/list, /switch)"
echo "cluster: ready; Ctrl-C stops everything"

# Say when something dies; keep running until Ctrl-C.
while true; do
	for i in "${!pids[@]}"; do
		if [[ -n "${pids[$i]}" ]] && ! kill -0 "${pids[$i]}" 2>/dev/null; then
			echo "cluster: ${names[$i]} exited (see its log in $dir)"
			pids[i]=""
		fi
	done
	sleep 1
done
